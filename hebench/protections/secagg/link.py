"""The secagg mode's client side on the local runtime: a SecAgg+ round instead of a plain upload.

The aggregate comes back as plaintext (the unmasked FedAvg), so opening it is the direct link's.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from hebench.fl.link import DirectLink, Link, Opened, direct_link
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.roster import ClientIdentity
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.params import SecAggParams


class SecAggLink(DirectLink):
    """Uploads by SecAgg+ masking with the other selected clients, relayed by the aggregator.

    With ``params.model_check`` the round carries a digest of the global model this client holds: that of
    the last aggregate it opened (the model every client loads), or of the run's start before the first. In the
    active model it signs with ``identity`` (the trusted set-up's) and counts on rounds of ``population`` clients.
    """

    def __init__(
        self,
        base: DirectLink,
        index: int,
        params: SecAggParams,
        samples: int,
        start: bytes,
        identity: ClientIdentity | None = None,
        population: int | None = None,
    ) -> None:
        super().__init__(base.channel, base.cipher, base.chunk_values)
        self.index, self.params, self.samples = index, params, samples
        self.identity, self.population = identity, population
        self.model_digest = hashlib.sha256(start).digest()

    def _round(self, meter: PhaseMeter) -> SecAggClientRound:
        return SecAggClientRound(
            self.index,
            self.channel,
            self.params,
            meter,
            self.model_digest,
            self.chunk_values,
            identity=self.identity,
            population=self.population,
        )

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        vector = np.concatenate(encrypted) if encrypted else np.empty(0, np.float32)
        round_ = self._round(meter)
        if self.leaving != "after_upload":
            round_.run(vector, int(meta["samples"]), meta)
            return
        round_.advertise_keys(int(meta["samples"]), meta)  # a dropout after its masked upload (hebench.faults)
        round_.share_keys()
        round_.masked_upload(vector)
        self.channel.send(Message(MessageKind.LEAVE, {"round": int(meta["round"]), "phase": "after_upload"}))
        # sent before the aggregator read the leave: gone unanswered
        self.channel.recv(MessageKind.SA_SURVIVORS if round_.active else MessageKind.SA_UNMASK)

    def leave(self, round_index: int, phase: str) -> None:
        """``after_train``: leave after sharing keys, before the masked upload (the neighbours reveal this
        client's mask key and the aggregator removes its pairwise masks); ``before_train``: before advertising."""
        if phase == "after_train":
            round_ = self._round(PhaseMeter())
            round_.advertise_keys(self.samples, {"round": round_index})
            round_.share_keys()
        super().leave(round_index, phase)

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        opened = super().open(msg, epoch, meter)
        if self.params.model_check and not opened.skipped:
            with meter.phase("model_check"):
                self.model_digest = hashlib.sha256(np.asarray(opened.encrypted, "<f4").tobytes()).digest()
        return opened


def secagg_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    params = ctx.config.mode_params
    assert isinstance(params, SecAggParams)
    base = direct_link(ctx, wiring, samples, meter)
    assert isinstance(base, DirectLink)
    start = b"initial:%d" % ctx.suite.seed if ctx.initial is None else np.asarray(ctx.initial, "<f4").tobytes()
    identity = ctx.identity  # the trusted set-up's signing key and roster (hebench.fl.roster)
    population = ctx.suite.training.selected_count(len(identity.roster)) if identity is not None else None
    return SecAggLink(base, ctx.client_index, params, samples, start, identity, population)
