"""A party's connection to the run's hub: key sets by epoch, records, oracle vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import PartyError
from hebench.net.limits import max_frame_bytes
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.runtime.flower.hub_wire import knock

ORACLE_KINDS = (MessageKind.ORACLE_UPDATE, MessageKind.ORACLE_AGGREGATE)
ORACLE_PART = MessageKind.ORACLE_PART  # a slice of the next oracle record's vector
ORACLE_PART_MAX = 16 << 20  # bytes of vector per frame at most


def oracle_part_values() -> int:
    """float32 values per ``oracle_part`` frame: 16 MiB, or less where the frame limit is lower."""
    return max(1, min(ORACLE_PART_MAX, max_frame_bytes() - 4096) // 4)


class HubLink:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    @classmethod
    def open(
        cls, address: tuple[str, int], ca_pem: str | None, credential: bytes, hello: dict[str, Any], timeout_s: float
    ) -> HubLink:
        channel = knock(address, ca_pem, credential, timeout_s)
        channel.send(Message(MessageKind.HELLO, hello))
        return cls(channel)

    def adapter(self, epoch: int, secret: bool) -> HEAdapter:
        """The epoch's key set; ``secret`` says which set this party must (and may only) receive."""
        self.channel.send(Message(MessageKind.EPOCH, {"epoch": epoch}))
        adapter = load_adapter(self.channel.recv(MessageKind.KEYS).parts[0])
        if adapter.has_secret_key != secret and adapter.info().adapter != "plain":
            got = "a secret" if adapter.has_secret_key else "only a public"
            raise PartyError(f"the hub sent {got} key set", "server and clients use their own hub credentials")
        return adapter

    def record(self, record: dict[str, Any]) -> None:
        self.channel.send(Message(MessageKind.RECORD, record))

    def records(self, items: list[dict[str, Any]]) -> None:
        """Forward records a party collected: oracle vectors as float32 bytes in ``oracle_part`` frames (each
        within the frame limit, whatever the model's size), then the record itself; the rest as JSON."""
        for item in items:
            if item["kind"] in ORACLE_KINDS:
                meta = {k: v for k, v in item.items() if k != "vector"}
                vector = np.asarray(item["vector"], "<f4").ravel()
                step = oracle_part_values()
                for start in range(0, len(vector), step):
                    self.channel.send(Message(ORACLE_PART, {}, (vector[start : start + step].tobytes(),)))
                self.channel.send(Message(item["kind"], meta))
            else:
                self.record(item)

    def close(self) -> None:
        self.channel.hang_up()
