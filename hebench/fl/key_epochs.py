"""One key set per epoch, shared by the local key authority and the Flower hub.

The first request for an epoch generates its key set, pushes the secret set
to every holder that is pushed to (offload engines; local host-he clients)
before anyone else gets it, with the run's decryption allowance where the
context has one (what an engine may open for its host:
:mod:`hebench.fl.allowance`), and writes one ``keygen`` record.
"""

from __future__ import annotations

import threading
from typing import Any

from hebench.crypto import create_adapter
from hebench.errors import PeerClosedError
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.results.records import KeygenRecord


class EpochKeys:
    def __init__(
        self, ctx: PartyContext, pushed: list[Channel], records: Any, holders: int, runtime: str | None = None
    ) -> None:
        self.ctx, self.pushed, self.records, self.holders, self.runtime = ctx, pushed, records, holders, runtime
        self._sets: dict[int, tuple[bytes, bytes]] = {}
        self._lock = threading.Lock()

    def get(self, epoch: int) -> tuple[bytes, bytes]:
        """(secret set, public set) of an epoch."""
        with self._lock:
            if epoch not in self._sets:
                self._sets = {e: s for e, s in self._sets.items() if e >= epoch - 1}
                self._sets[epoch] = self._make(epoch)
            return self._sets[epoch]

    def _make(self, epoch: int) -> tuple[bytes, bytes]:
        meter = PhaseMeter()
        adapter = create_adapter(self.ctx.config.adapter, self.ctx.config.adapter_params)
        with meter.phase("keygen"):
            adapter.keygen()
            secret, public = adapter.export_keys(secret=True), adapter.export_keys(secret=False)
        sent = sum(h.bytes_sent for h in self.pushed)
        with meter.phase("distribute"):
            self._push(epoch, secret, public)
        self.records.put(
            KeygenRecord(
                config=self.ctx.config.label,
                epoch=epoch,
                key_id=adapter.key_id,
                info=adapter.info().__dict__,
                key_bytes={"secret_set": len(secret), "public_set": len(public)},
                holders=self.holders,
                runtime=self.runtime,
                bytes_sent=sum(h.bytes_sent for h in self.pushed) - sent,  # secret sets pushed to holders
                **meter.measured(),
            )
        )
        return secret, public

    def allowance_meta(self) -> dict[str, Any]:
        """The ``allow`` field of a key delivery: what a holder that decrypts for others may open in this run."""
        allowance = self.ctx.allowance
        return {} if allowance is None else {"allow": allowance.to_json()}

    def _push(self, epoch: int, secret: bytes, public: bytes) -> None:
        """Hand the epoch's secret set to every holder that is pushed to (a mode may push more: decryptor-he)."""
        meta = {"epoch": epoch, "secret": True, "run": self.ctx.run_id, **self.allowance_meta()}
        for holder in list(self.pushed):
            try:
                holder.send(Message(MessageKind.KEYS, meta, (secret,)))
            except PeerClosedError:  # a client (or its engine) that died is a dropout, not the end of the run
                if not self.ctx.suite.faults_tolerated(self.ctx.config):
                    raise
                self.pushed.remove(holder)
