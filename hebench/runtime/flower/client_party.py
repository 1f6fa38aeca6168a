"""A SuperNode's hebench client: its shard, its model, and what it keeps between messages.

Built from the Flower context (run config: the plan; node config: partition,
hub credential, engine) and cached per ClientApp process. What must survive
between messages lives in ``context.state`` on the node: the decrypted global
model (so an aggregate is decrypted once per round), the agreed selective
mask, and the first half of a round's record (training), completed when the
round's aggregate arrives.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context

from hebench.data.federated import FederatedData
from hebench.data.registry import load_federated
from hebench.errors import PartyError
from hebench.faults import NO_FAULT, Fault, fault_for
from hebench.fl.local_model import LocalModel
from hebench.fl.party import Credentials, PartyContext
from hebench.fl.update import model_vector
from hebench.runtime.flower.plan import INITIAL_DIGEST, FlowerPlan, NodeSettings

GLOBAL_KEY, GLOBAL_META = "hebench-global", "hebench-global-meta"
MASK_KEY, PENDING_KEY = "hebench-mask", "hebench-pending"


class RecordSink(list):
    """Collects what hebench's client code reports (``put``), for the mod to forward to the hub."""

    def put(self, record: dict[str, Any]) -> None:
        self.append(record)

    def drain(self) -> list[dict[str, Any]]:
        items = list(self)
        self.clear()
        return items


class NodeParty:
    def __init__(self, plan: FlowerPlan, node: NodeSettings) -> None:
        suite = plan.suite
        if node.partitions != suite.data.clients:
            raise PartyError(
                f"SuperNode says num-partitions={node.partitions}, the suite has data.clients={suite.data.clients}",
                "start one SuperNode per client, or set data.clients to the federation's size",
            )
        if not 0 <= node.partition < node.partitions:
            raise PartyError(f"partition-id {node.partition} is out of range", "use 0 … num-partitions-1")
        self.plan, self.node = plan, node
        torch.set_num_threads(1)  # as local parties: idle OpenMP threads would spin on the CPU time measured
        data = _federated(plan)
        self.ctx = PartyContext(
            suite=suite,
            config=plan.config,
            run_dir=Path(plan.run_dir),
            credentials=Credentials(),  # a ClientApp reaches the hub with its node's own credential
            run_id=plan.run_id,
            start_round=0,
            input_shape=data.input_shape,
            num_classes=data.num_classes,
            end_of_text=data.end_of_text,
            client_index=node.partition,
            data=data.clients[node.partition],
            test=(data.test_x, data.test_y) if node.partition == 0 else None,
        )
        self.sink = RecordSink()
        self.local = LocalModel(self.ctx, self.sink)

    @property
    def index(self) -> int:
        return self.node.partition

    def fault(self, round_index: int) -> Fault:
        """This node's drawn fault in ``round_index``: the same draw as the local runtime's client of this
        partition (:func:`hebench.faults.fault_for`), so the same clients fail at the same points."""
        spec = self.plan.suite.faults_for(self.plan.config)
        return NO_FAULT if spec is None else fault_for(spec, round_index, self.index)

    def initial_global(self, context: Context) -> np.ndarray:
        """The suite's seeded initial model (the global model until a round has an aggregate), kept in the node's
        state the first time it is asked (before any training: a node's model changes only by training, which
        asks first, and by loading a global model), so a node that trained can go back to it (a skipped round)."""
        kept = self.cached_global(context, INITIAL_DIGEST)
        if kept is not None:
            return kept
        vector = model_vector(self.local.model)
        self.keep_global(context, INITIAL_DIGEST, vector)
        return vector

    def mask(self, context: Context) -> np.ndarray | None:
        stored = context.state.array_records.get(MASK_KEY)
        if stored is not None:
            return stored["mask"].numpy().astype(bool)
        return self.local.initial_mask()

    @staticmethod
    def keep_mask(context: Context, mask: np.ndarray) -> None:
        context.state[MASK_KEY] = ArrayRecord({"mask": Array(mask.astype(np.uint8))})

    @staticmethod
    def cached_global(context: Context, digest: str) -> np.ndarray | None:
        stored, meta = context.state.array_records.get(GLOBAL_KEY), context.state.config_records.get(GLOBAL_META)
        if stored is None or meta is None or meta.get("digest") != digest:
            return None
        return stored["model"].numpy()

    @staticmethod
    def keep_global(context: Context, digest: str, vector: np.ndarray) -> None:
        context.state[GLOBAL_KEY] = ArrayRecord({"model": Array(np.asarray(vector, np.float32))})
        context.state[GLOBAL_META] = ConfigRecord({"digest": digest})

    @staticmethod
    def pending(context: Context) -> dict[str, Any] | None:
        stored = context.state.config_records.get(PENDING_KEY)
        return json.loads(str(stored["json"])) if stored is not None and "json" in stored else None

    @staticmethod
    def keep_pending(context: Context, record: dict[str, Any] | None) -> None:
        context.state[PENDING_KEY] = ConfigRecord({"json": json.dumps(record)}) if record else ConfigRecord()


def digest_of(blobs: tuple[bytes, ...]) -> str:
    h = hashlib.sha256()
    for b in blobs:
        h.update(hashlib.sha256(b).digest())
    return h.hexdigest()


# A process may host many virtual nodes (simulation): it keeps the parties it served last, and the data once.
KEPT_PARTIES = 16
_PARTIES: OrderedDict[tuple[str, int], NodeParty] = OrderedDict()
_DATA: dict[str, FederatedData] = {}


def _federated(plan: FlowerPlan) -> FederatedData:
    """The run's federated data, loaded once per process (every node takes its own shard of it)."""
    if plan.run_id not in _DATA:
        _DATA.clear()
        _DATA[plan.run_id] = load_federated(plan.suite.data, plan.suite.seed)
    return _DATA[plan.run_id]


def node_party(context: Context) -> NodeParty:
    """This node's party for the context's run (made once per process, or again once evicted)."""
    plan = FlowerPlan.from_run_config(dict(context.run_config))
    node = NodeSettings.from_node_config(dict(context.node_config))
    key = (plan.run_id, node.partition)
    if key not in _PARTIES:
        _PARTIES[key] = NodeParty(plan, node)
        while len(_PARTIES) > KEPT_PARTIES:
            _PARTIES.popitem(last=False)
    _PARTIES.move_to_end(key)
    return _PARTIES[key]
