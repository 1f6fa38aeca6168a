"""Who encrypts for a Flower client: the client itself (host-he, raw) or its offload engine.

Each turns the update's pieces into wire blobs and an aggregate's blobs back
into a vector, charging the host's phases to a :class:`PhaseMeter`. The engine
variant never sees a key on the host side: it sends plaintext to the engine
and gets ciphertext back (and the reverse), with the engine's own measurements.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from hebench.crypto import HEAdapter
from hebench.errors import PartyError
from hebench.fl.meter import PhaseMeter, merge_phases
from hebench.flower.hub_link import HubLink
from hebench.flower.plan import FlowerPlan, NodeSettings
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.offload.host import engine_tls
from hebench.selective.split import PLAIN


class Cipher(ABC):
    def __init__(self) -> None:
        self.engine_reports: list[dict[str, Any]] = []
        self.engine_bytes = 0

    @abstractmethod
    def encrypt(self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter) -> tuple[bytes, ...]: ...

    @abstractmethod
    def decrypt(self, blobs: tuple[bytes, ...], epoch: int, meter: PhaseMeter) -> np.ndarray: ...

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""


class KeyHolderCipher(Cipher):
    """host-he (and raw, with the plain adapter): the client process holds the epoch's secret set."""

    def __init__(self, hub: HubLink, raw: bool) -> None:
        super().__init__()
        self.hub, self.raw = hub, raw
        self._adapters: dict[int, HEAdapter] = {}

    def adapter(self, epoch: int, meter: PhaseMeter) -> HEAdapter:
        if self.raw:
            return PLAIN
        if epoch not in self._adapters:
            with meter.phase("keys"):
                self._adapters[epoch] = self.hub.adapter(epoch, secret=True)
        return self._adapters[epoch]

    def encrypt(self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter) -> tuple[bytes, ...]:
        adapter = self.adapter(epoch, meter)
        with meter.phase("encrypt"):
            encs = [adapter.encrypt(p) for p in pieces if len(p)]
        with meter.phase("serialize"):
            return tuple(adapter.serialize(e) for e in encs)

    def decrypt(self, blobs: tuple[bytes, ...], epoch: int, meter: PhaseMeter) -> np.ndarray:
        adapter = self.adapter(epoch, meter)
        with meter.phase("deserialize"):
            encs = [adapter.deserialize(b) for b in blobs]
        with meter.phase("decrypt"):
            parts = [adapter.decrypt(e) for e in encs]
        return np.concatenate(parts) if parts else np.empty(0, np.float32)


class EngineCipher(Cipher):
    """offload: the node's engine (a long-lived sidecar) encrypts and decrypts; this process has no key."""

    def __init__(self, plan: FlowerPlan, node: NodeSettings) -> None:
        super().__init__()
        if node.engine is None:
            raise PartyError(
                f"offload mode, but SuperNode {node.partition} names no engine",
                "start the node with hebench-engine='HOST:PORT' in --node-config (hebench flower up --offload)",
            )
        tls = engine_tls(str(node.engine_tls) if node.engine_tls else None, node.partition)
        if tls is None:
            raise PartyError(
                "offload engines beside SuperNodes need mutual TLS", "set hebench-engine-tls in node config"
            )
        framed = dial(node.engine, tls=tls, authkey=None, peer=f"engine {node.partition}")
        self.channel = Channel(framed, f"engine {node.partition}", plan.suite.measure.timeout_s)  # type: ignore[arg-type]
        self.channel.send(Message("hello", {"role": "service", "client": node.partition, "run": plan.run_id}))

    def _ask(self, kind: str, epoch: int, parts: tuple[bytes, ...], meter: PhaseMeter) -> Message:
        before = self.channel.bytes_sent + self.channel.bytes_received
        with meter.phase("send"):
            self.channel.send(Message(kind, {"epoch": epoch}, parts))
        with meter.phase("wait"):
            reply = self.channel.recv()
        self.engine_bytes += self.channel.bytes_sent + self.channel.bytes_received - before
        self.engine_reports.append(reply.meta["engine"])
        return reply

    def encrypt(self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter) -> tuple[bytes, ...]:
        values = np.concatenate(pieces) if pieces else np.empty(0, np.float32)
        return self._ask("encrypt", epoch, (values.astype("<f4").tobytes(),), meter).parts

    def decrypt(self, blobs: tuple[bytes, ...], epoch: int, meter: PhaseMeter) -> np.ndarray:
        return np.frombuffer(self._ask("decrypt", epoch, blobs, meter).parts[0], dtype="<f4")

    def close(self) -> None:
        self.channel.hang_up()


def merged_engine_report(reports: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The engine's phases over one round's requests (as local offload records carry them)."""
    if not reports:
        return None
    last = reports[-1]
    return {
        "cores": last.get("cores"),
        "phases": merge_phases(reports),
        "peak_rss_bytes": max(r["peak_rss_bytes"] for r in reports),
        "cycles_source": last.get("cycles_source"),
    }
