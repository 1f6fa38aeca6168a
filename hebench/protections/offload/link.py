"""The offload link: the client host streams plaintext to its engine and never holds a key.

The engine encrypts each chunk, forwards the ciphertext to the aggregator as
the client's proxy, decrypts the aggregate and returns plaintext (see
:mod:`hebench.protections.offload.engine`), with its own measurements in the reply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hebench.fl.chunks import chunks_of
from hebench.fl.link import Link, Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import AGGREGATOR_DOOR, PartyContext, Wiring, client_party, engine_door
from hebench.fl.streams import RESULT_CHUNKS, read_aggregate
from hebench.net.certs import ENGINE_CN, TLSFiles, engine_cn
from hebench.net.messages import MessageKind
from hebench.net.shaping.scope import mark_on_device
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.protections.selective.split import PLAIN
from hebench.results.fields import EngineReport


def engine_tls(tls_dir: str | None, index: int) -> TLSFiles | None:
    """Host ``index``'s client certificate for its engine, from a `hebench engine certs` folder."""
    if not tls_dir:
        return None
    folder = Path(tls_dir)
    return TLSFiles(folder / f"host-{index}.pem", folder / f"host-{index}-key.pem", folder / "ca.pem")


def engine_names(index: int) -> tuple[str, ...]:
    """The certificate names host ``index`` accepts from its engine: ``hebench-engine-<index>``, or the bare
    name of an engine certificate from an older `hebench engine certs` folder (it names no host)."""
    return (engine_cn(index), ENGINE_CN)


class EngineLink(Link):
    """Plaintext chunks to the engine and back: the engine streams the decrypted aggregate in as it decrypts it."""

    reply_kinds = {MessageKind.TRAIN: MessageKind.RESULT, MessageKind.MAP: MessageKind.MAP_RESULT}  # noqa: RUF012 - read only
    chunk_kinds = RESULT_CHUNKS

    def __init__(self, engine: Channel, chunk_values: int) -> None:
        self.channel, self.chunk_values = engine, chunk_values

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        """Plaintext to the engine: chunks to encrypt, then (selective) the part to pass through."""
        r = int(meta["round"])
        with meter.phase("send"):
            for values in chunks_of(encrypted, self.chunk_values):
                self.channel.send(Message(MessageKind.UPDATE_CHUNK, {"round": r}, (values.astype("<f4").tobytes(),)))
            if plain is not None:
                for values in chunks_of([plain], self.chunk_values):
                    self.channel.send(
                        Message(MessageKind.PLAIN_PART, {"round": r}, (PLAIN.serialize(PLAIN.encrypt(values)),))
                    )
            self.channel.send(Message(MessageKind.UPDATE_END, {"round": r, "samples": int(meta["samples"])}))

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        def values(blob: bytes) -> np.ndarray:
            return np.frombuffer(blob, dtype="<f4")

        encrypted, clear, last = read_aggregate(self.channel, msg, self.end_of(msg), self.chunk_kinds, values, meter)
        engine = EngineReport.from_json(last.meta["engine"])
        return Opened(encrypted, clear, last.meta.get("weights", {}), engine, **Opened.survivors_of(last.meta))


def engine_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    """Dial this host's engine and open its session (the engine then dials the aggregator for it)."""
    assert wiring.engine is not None
    index, (address, tls_dir) = ctx.client_index, wiring.engine
    tls = engine_tls(tls_dir, index)
    creds = ctx.credentials
    framed = dial(
        tuple(address),
        tls=tls,
        authkey=None if tls else creds.key(engine_door(index)),  # this host's own key at its own engine's door
        peer=f"engine {index}",
        server_names=engine_names(index),
        retry_s=ctx.suite.measure.setup_timeout_s,
        party=client_party(index),
    )
    engine = Channel(framed, f"engine {index}", ctx.timeout_s, ctx.transcript(f"client-{index}"))  # type: ignore[arg-type]
    mark_on_device(engine.conn)  # host <-> its engine stays inside the client's device
    hello = {
        "role": "host",
        "client": index,
        "samples": samples,
        "aggregator": list(wiring.aggregator),
        # this host's key at the aggregator's door: the engine uploads as its proxy (and as nobody else)
        "authkey": creds.key(AGGREGATOR_DOOR).hex(),
        "chunk_values": ctx.suite.offload.chunk_values,
        "run": ctx.run_id,
    }
    engine.send(Message(MessageKind.HELLO, hello))
    return EngineLink(engine, ctx.suite.offload.chunk_values)
