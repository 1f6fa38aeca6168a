"""The ciphers a Flower client mod uses, named by the modes' specs (``flower_cipher``).

host-he holds the secret key set in the ClientApp process (from the hub's
client door); offload asks the node's engine sidecar and never sees a key.
"""

from __future__ import annotations

from typing import Any

from hebench.errors import PartyError
from hebench.fl.cipher import Cipher, KeyHolderCipher
from hebench.fl.meter import merge_phases
from hebench.flower.hub_link import HubLink
from hebench.flower.plan import FlowerPlan, NodeSettings
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.offload.cipher import EngineCipher
from hebench.offload.link import engine_tls


def hub_key_cipher(plan: FlowerPlan, node: NodeSettings, hub: HubLink) -> Cipher:
    """host-he on Flower: the ClientApp process fetches the epoch's secret set from the hub's client door."""
    return KeyHolderCipher(lambda epoch: hub.adapter(epoch, secret=True), require_secret=True)


def node_engine_cipher(plan: FlowerPlan, node: NodeSettings, hub: HubLink) -> Cipher:
    """offload on Flower: the node's engine (a long-lived sidecar) encrypts and decrypts; no key here."""
    if node.engine is None:
        raise PartyError(
            f"offload mode, but SuperNode {node.partition} names no engine",
            "start the node with hebench-engine='HOST:PORT' in --node-config (hebench flower up --offload)",
        )
    tls = engine_tls(str(node.engine_tls) if node.engine_tls else None, node.partition)
    if tls is None:
        raise PartyError("offload engines beside SuperNodes need mutual TLS", "set hebench-engine-tls in node config")
    framed = dial(node.engine, tls=tls, authkey=None, peer=f"engine {node.partition}")
    channel = Channel(framed, f"engine {node.partition}", plan.suite.measure.timeout_s)  # type: ignore[arg-type]
    channel.send(Message("hello", {"role": "service", "client": node.partition, "run": plan.run_id}))
    return EngineCipher(channel)


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
