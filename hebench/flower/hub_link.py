"""A party's connection to the run's hub: key sets by epoch, records, oracle vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import PartyError
from hebench.flower.hub_wire import knock
from hebench.net.transport import Channel, Message


class HubLink:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    @classmethod
    def open(
        cls, address: tuple[str, int], ca_pem: str | None, credential: bytes, hello: dict[str, Any], timeout_s: float
    ) -> HubLink:
        channel = knock(address, ca_pem, credential, timeout_s)
        channel.send(Message("hello", hello))
        return cls(channel)

    def adapter(self, epoch: int, secret: bool) -> HEAdapter:
        """The epoch's key set; ``secret`` says which set this party must (and may only) receive."""
        self.channel.send(Message("epoch", {"epoch": epoch}))
        adapter = load_adapter(self.channel.recv("keys").parts[0])
        if adapter.has_secret_key != secret and adapter.info().adapter != "plain":
            got = "a secret" if adapter.has_secret_key else "only a public"
            raise PartyError(f"the hub sent {got} key set", "server and clients use their own hub credentials")
        return adapter

    def record(self, record: dict[str, Any]) -> None:
        self.channel.send(Message("record", record))

    def records(self, items: list[dict[str, Any]]) -> None:
        """Forward records a party collected: oracle vectors as bytes, the rest as JSON."""
        for item in items:
            if item["kind"] in ("oracle_update", "oracle_aggregate"):
                meta = {k: v for k, v in item.items() if k != "vector"}
                self.channel.send(Message(item["kind"], meta, (np.asarray(item["vector"], "<f4").tobytes(),)))
            else:
                self.record(item)

    def close(self) -> None:
        self.channel.hang_up()
