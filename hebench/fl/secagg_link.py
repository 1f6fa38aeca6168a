"""The secagg mode's client side on the local runtime: a SecAgg+ round instead of a plain upload.

The aggregate comes back as plaintext (the unmasked FedAvg), so opening it is the direct link's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.fl.link import DirectLink, Link, direct_link
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.secagg_client import SecAggClientRound
from hebench.modes.params import SecAggParams


class SecAggLink(DirectLink):
    """Uploads by SecAgg+ masking with the other selected clients, relayed by the aggregator."""

    def __init__(self, base: DirectLink, index: int, params: SecAggParams, samples: int) -> None:
        super().__init__(base.channel, base.cipher)
        self.index, self.params, self.samples = index, params, samples

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        vector = np.concatenate(encrypted) if encrypted else np.empty(0, np.float32)
        SecAggClientRound(self.index, self.channel, self.params, meter).run(vector, int(meta["samples"]), meta)


def secagg_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    params = ctx.config.mode_params
    assert isinstance(params, SecAggParams)
    base = direct_link(ctx, wiring, samples, meter)
    assert isinstance(base, DirectLink)
    return SecAggLink(base, ctx.client_index, params, samples)
