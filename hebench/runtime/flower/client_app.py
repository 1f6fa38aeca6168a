"""The Flower ClientApp: hebench's own client code, behind the encrypting mod.

The functions here see plaintext only; ``hebench_mod`` (outermost) decrypts
what arrives and encrypts what leaves. Component path for a Flower App:
``hebench.runtime.flower.client_app:app``; ``with_functions`` puts the same functions
on another ClientApp (the simulation's, with one more mod).
"""

from __future__ import annotations

import json

import numpy as np
from flwr.app import Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from hebench.fl.update import load_vector
from hebench.runtime.flower.client_mod import hebench_mod
from hebench.runtime.flower.client_party import node_party
from hebench.runtime.flower.codec import model_record, model_vector
from hebench.runtime.flower.plan import CLIENT, ROUND, WEIGHTS


def train(msg: Message, context: Context) -> Message:
    """Local training from the global model (or, in round 1, the suite's seeded initial model)."""
    party = node_party(context)
    arrays = msg.content.array_records.get("arrays")
    if arrays is not None and len(arrays):
        load_vector(party.local.model, model_vector(arrays))
    # DP: the charge waits until the mod sends the update (or withdraws it: the node left, hebench.faults)
    vector, loss = party.local.train(int(msg.content.config_records["config"][ROUND]), hold_charge=True)
    metrics = MetricRecord({"num-examples": party.local.samples, "train-loss": loss, CLIENT: party.index})
    return Message(RecordDict({"arrays": model_record(vector), "metrics": metrics}), reply_to=msg)


def evaluate(msg: Message, context: Context) -> Message:
    """Load the global model; node 0 evaluates it on the test split and checkpoints it."""
    party = node_party(context)
    config = msg.content.config_records["config"]
    weights = json.loads(str(config[WEIGHTS]))
    report = party.local.apply(int(config[ROUND]), model_vector(msg.content.array_records["arrays"]), weights)
    metrics = MetricRecord({"num-examples": party.local.samples, CLIENT: party.index, **report})
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


def score_map(msg: Message, context: Context) -> Message:
    """Selective encryption: this node's local sensitivity (or magnitude, random) map."""
    party = node_party(context)
    metrics = MetricRecord({"num-examples": 1, CLIENT: party.index})
    return Message(RecordDict({"arrays": model_record(party.local.score_map()), "metrics": metrics}), reply_to=msg)


def agree_mask(msg: Message, context: Context) -> Message:
    """Selective encryption: the mask every node derives from the same decrypted sum of maps."""
    party = node_party(context)
    mask = party.local.agree(model_vector(msg.content.array_records["arrays"]))
    party.keep_mask(context, mask)
    metrics = MetricRecord({"num-examples": 1, CLIENT: party.index, "encrypted-fraction": float(np.mean(mask))})
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


def partition(msg: Message, context: Context) -> Message:
    """Which suite client this node is, so the server samples by partition as the local runtime does, and its
    sample count (the FedAvg weight the server fixes before a round, as a local client states it on connecting)."""
    party = node_party(context)
    metrics = MetricRecord({CLIENT: party.index, "num-examples": party.local.samples})
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


def with_functions(app: ClientApp) -> ClientApp:
    """``app`` with hebench's training, evaluation, mask-agreement and partition functions registered."""
    app.train()(train)
    app.evaluate()(evaluate)
    app.query("hebench_map")(score_map)
    app.query("hebench_mask")(agree_mask)
    app.query("hebench_partition")(partition)
    return app


app = with_functions(ClientApp(mods=[hebench_mod]))
