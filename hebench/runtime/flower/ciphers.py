"""The ciphers a Flower client mod uses, named by the modes' specs (``flower_cipher``).

host-he holds the secret key set in the ClientApp process (from the hub's
client door); offload asks the node's engine sidecar and never sees a key.
Each factory takes the plan, the node's settings, its hub link and its
``context.state`` (what the node keeps between messages).
"""

from __future__ import annotations

from typing import Any

from flwr.app import ConfigRecord, RecordDict

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError
from hebench.fl.cipher import Cipher, KeyHolderCipher
from hebench.fl.meter import merge_phases
from hebench.net.messages import MessageKind
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.protections.offload.cipher import EngineCipher
from hebench.protections.offload.link import engine_names, engine_tls
from hebench.runtime.flower.hub_link import HubLink
from hebench.runtime.flower.plan import FlowerPlan, NodeSettings

KEYS_HELD = "hebench-keys-held"  # node state: the run and the key epochs this node has received
_LOADED: dict[tuple[str, int], HEAdapter] = {}  # this process's loaded key set per (run, epoch)


def hub_key_cipher(plan: FlowerPlan, node: NodeSettings, hub: HubLink, state: RecordDict) -> Cipher:
    """host-he on Flower: the node's secret set, from the hub's client door once per node and key epoch.

    A node keeps its keys between messages, as a device does: its state names the epochs it received,
    and the process keeps one loaded copy per epoch for every node it hosts (a simulation worker, as a
    local pool worker does). A fresh ClientApp process (deployment) holds no copy and fetches again.
    """

    def keys(epoch: int) -> HEAdapter:
        held = state.config_records.get(KEYS_HELD)
        epochs = [int(e) for e in held["epochs"]] if held and held["run"] == plan.run_id else []  # type: ignore[union-attr]
        loaded = _LOADED.get((plan.run_id, epoch))
        if loaded is not None and epoch in epochs:
            return loaded
        adapter = hub.adapter(epoch, secret=True)
        for stale in [k for k in _LOADED if k[0] != plan.run_id or k[1] < epoch - 1]:
            del _LOADED[stale]
        _LOADED[(plan.run_id, epoch)] = adapter
        kept = sorted({*(e for e in epochs if e >= epoch - 1), epoch})
        state[KEYS_HELD] = ConfigRecord({"run": plan.run_id, "epochs": kept})
        return adapter

    return KeyHolderCipher(keys, require_secret=True)


def node_engine_cipher(plan: FlowerPlan, node: NodeSettings, hub: HubLink, state: RecordDict) -> Cipher:
    """offload on Flower: the node's engine (a long-lived sidecar) encrypts and decrypts; no key here."""
    if node.engine is None:
        raise PartyError(
            f"offload mode, but SuperNode {node.partition} names no engine",
            "start the node with hebench-engine='HOST:PORT' in --node-config (hebench flower up --offload)",
        )
    tls = engine_tls(str(node.engine_tls) if node.engine_tls else None, node.partition)
    if tls is None:
        raise PartyError("offload engines beside SuperNodes need mutual TLS", "set hebench-engine-tls in node config")
    framed = dial(
        node.engine, tls=tls, authkey=None, peer=f"engine {node.partition}", server_names=engine_names(node.partition)
    )
    channel = Channel(framed, f"engine {node.partition}", plan.suite.measure.timeout_s)  # type: ignore[arg-type]
    channel.send(Message(MessageKind.HELLO, {"role": "service", "client": node.partition, "run": plan.run_id}))
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
