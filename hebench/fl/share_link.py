"""The secret-sharing mode's client side: one share to each of K aggregators; the sum rebuilt from theirs."""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.fl.link import DirectLink, Link, Opened, direct_link
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.ring_shares import combine, decode, encode, split
from hebench.modes.params import SecretSharingParams
from hebench.net.transport import Channel, Message, connect


class ShareLink(DirectLink):
    """Aggregator 0 (the coordinator) on ``channel``; aggregators 1..K-1 on ``holders``."""

    def __init__(self, base: DirectLink, holders: list[Channel], params: SecretSharingParams) -> None:
        super().__init__(base.channel, base.cipher)
        self.holders, self.params = holders, params
        self.rng = np.random.default_rng()  # stochastic rounding only; shares come from the OS's CSPRNG

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        vector = np.concatenate(encrypted) if encrypted else np.empty(0, np.float32)
        with meter.phase("share"):
            shares = split(encode(vector, int(meta["samples"]), self.params, self.rng), 1 + len(self.holders))
        with meter.phase("send"):
            self.channel.send(Message("update", {**meta, "plain_parts": 0}, (shares[0].tobytes(),)))
            for holder, share in zip(self.holders, shares[1:], strict=True):
                holder.send(Message("share", {"round": meta["round"]}, (share.tobytes(),)))

    def leave(self, round_index: int, phase: str) -> None:
        """Tell every aggregator (a client that stops answering is not yet survived: hebench.faults)."""
        super().leave(round_index, phase)
        for holder in self.holders:
            holder.send(Message("leave", {"round": round_index, "phase": phase}))

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        if msg.meta.get("skipped"):  # nobody arrived: the holders' sums are empty
            for h in self.holders:
                h.recv("share_sum")
            return Opened(np.empty(0, np.float32), np.empty(0, np.float32), {}, skipped=True)
        with meter.phase("receive_sums"):
            sums = [msg.parts[0], *(h.recv("share_sum").parts[0] for h in self.holders)]
        with meter.phase("reconstruct"):
            total = combine([np.frombuffer(s, dtype=np.uint64) for s in sums])
            vector = decode(total, int(msg.meta["samples_total"]), self.params).astype(np.float32)
        return Opened(vector, np.empty(0, np.float32), msg.meta["weights"])

    def traffic(self) -> tuple[int, int]:
        channels = [self.channel, *self.holders]
        return sum(c.bytes_sent for c in channels), sum(c.bytes_received for c in channels)

    def close(self) -> None:
        for holder in self.holders:
            holder.close()
        super().close()


def share_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    params = ctx.config.mode_params
    assert isinstance(params, SecretSharingParams)
    if len(wiring.helpers) != params.extra_aggregators:
        raise PartyError(
            f"secret-sharing needs {params.extra_aggregators} share holders beside the coordinator, "
            f"the runtime wired {len(wiring.helpers)}",
            "run it on the local runtime (hebench run without --engine flower)",
        )
    base = direct_link(ctx, wiring, samples, meter)
    assert isinstance(base, DirectLink) and ctx.credentials.aggregator is not None
    holders = []
    with meter.phase("connect"):
        tls = ctx.tls_for(f"client-{ctx.client_index}")  # transport: tls covers the shares too
        for k, address in enumerate(wiring.helpers, start=1):
            ch = connect(
                address,
                ctx.credentials.aggregator,
                f"aggregator {k}",
                ctx.timeout_s,
                tls=tls,
                server=f"aggregator-{k}",
                retry_s=ctx.suite.measure.setup_timeout_s,
            )
            ch.send(Message("hello", {"role": "client", "client": ctx.client_index}))
            holders.append(ch)
    return ShareLink(base, holders, params)
