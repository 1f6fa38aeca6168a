"""The Flower server sums training replies as they are pulled, one at a time, and applies the round's faults.

A fake Grid stands in for Flower's (``push_messages`` / ``pull_messages``): it counts the replies still alive
each time the server pulls another, so a server that kept every reply (Flower's ``send_and_receive`` handing
the strategy all of them) fails here. The streamed aggregate is the old whole-reply sum; nodes that left are
out of the sum, the record names them, and a round below ``training.min_clients`` is skipped.
"""

from __future__ import annotations

import gc
import json
import weakref

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.crypto import create_adapter
from hebench.crypto.exact_weights import PreWeight
from hebench.errors import PartyError
from hebench.fl.aggregator import sum_updates
from hebench.fl.fedavg import fedavg_weights
from hebench.protections.selective.split import PLAIN
from tests.conftest import INSTALLED

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from hebench.runtime.flower.codec import PLAIN_STYPE, update_parts, update_record
from hebench.runtime.flower.plan import (
    CLIENT,
    GLOBAL_DIGEST,
    INITIAL_DIGEST,
    LEFT,
    SKIPPED,
    WEIGHT_TOTAL,
    WEIGHTS,
    FlowerPlan,
)
from tests.runtime.flower.test_flower_parts import FakeHub

CLIENTS, CHUNK = 4, 7
SAMPLES = {0: 30, 1: 10, 2: 5, 3: 15}


def _suite(**training):
    return parse_suite(
        {
            "name": "stream",
            "data": {"dataset": "digits", "clients": CLIENTS},
            "model": {"name": "mlp", "hidden": 4},
            "training": {"rounds": 1, **training},
            "configurations": [{"mode": "raw"}],
            "measure": {"timeout_s": 20},
        }
    )


@pytest.fixture
def identity(monkeypatch):
    from flwr.supercore.task_identity import TaskIdentity

    for field in ("_run_id", "_node_id", "_task_id"):  # what a ServerApp process has set
        monkeypatch.setattr(TaskIdentity, field, 1)


def _strategy(tmp_path, **training):
    from hebench.runtime.flower.strategy import HEFedAvg

    keys = create_adapter("plain", {})
    keys.keygen()
    plan = FlowerPlan(_suite(**training), 0, "run-1", ("127.0.0.1", 1), ("127.0.0.1", 2), str(tmp_path))
    strategy = HEFedAvg(plan, FakeHub(keys.export_keys(secret=False)))  # type: ignore[arg-type]
    strategy.POLL_S = 0.0
    return strategy


def _vectors() -> dict[int, np.ndarray]:
    rng = np.random.default_rng(4)
    return {i: rng.normal(size=3 * CHUNK + 2).astype(np.float32) for i in range(CLIENTS)}


def _blobs(vector: np.ndarray) -> tuple[bytes, ...]:
    return tuple(PLAIN.serialize(PLAIN.encrypt(vector[k : k + CHUNK])) for k in range(0, len(vector), CHUNK))


def _content(client: int, vector: np.ndarray | None, left: str | None = None) -> RecordDict:
    content = RecordDict({"metrics": MetricRecord({"num-examples": SAMPLES[client], CLIENT: client})})
    if left is not None:
        content["fault"] = ConfigRecord({LEFT: left})
    if vector is not None:
        content["arrays"] = update_record(_blobs(vector), (), PLAIN_STYPE)
    return content


class FakeGrid:
    """Flower's Grid as the strategy uses it: node IDs, the partition query, and push / pull of train messages.

    A reply is built when it is pulled (replies come in last client first); ``alive_at_pull`` records how many
    replies pulled earlier were still held by the server each time it pulled another."""

    def __init__(self, vectors: dict[int, np.ndarray], left: dict[int, str] | None = None) -> None:
        self.vectors, self.left = vectors, left or {}
        self.partition_of = {100 + i: i for i in vectors}
        self.pushed: dict[str, Message] = {}
        self.asked: list[int] = []
        self.alive_at_pull: list[int] = []
        self._alive = 0
        self.done: set[int] = set()  # clients whose reply was pulled (or that never reply)

    def get_node_ids(self):
        return list(self.partition_of)

    def send_and_receive(self, messages, timeout=None):
        replies = []
        for m in messages:
            i = self.partition_of[m.metadata.dst_node_id]
            metrics = MetricRecord({CLIENT: i, "num-examples": SAMPLES[i]})
            replies.append(Message(RecordDict({"metrics": metrics}), reply_to=m))
        return replies

    def push_messages(self, messages):
        ids = []
        for m in messages:
            message_id = f"m{len(self.pushed)}"
            m.metadata.__dict__["_message_id"] = message_id
            self.pushed[message_id] = m
            ids.append(message_id)
        return ids

    def _gone(self) -> None:
        self._alive -= 1

    def pull_messages(self, message_ids):
        ids = list(message_ids)
        self.asked.append(len(ids))
        self.alive_at_pull.append(self._alive)
        replies = []
        for message_id in ids:
            asked = self.pushed[message_id]
            i = self.partition_of[asked.metadata.dst_node_id]
            if i in self.done or i != max(self._waiting()):  # the last client's reply comes in first
                continue
            phase = self.left.get(i)
            vector = None if phase in ("before_train", "after_train") else self.vectors[i]
            reply = Message(_content(i, vector, phase), reply_to=asked)
            self.done.add(i)
            self._alive += 1
            weakref.finalize(reply.content, self._gone)  # the content: the update's bytes
            replies.append(reply)
        return replies

    def _waiting(self) -> set[int]:
        return set(self.vectors) - self.done


def test_the_server_pulls_each_reply_alone_and_holds_one_at_a_time(tmp_path, identity):
    vectors = _vectors()
    grid = FakeGrid(vectors)
    strategy = _strategy(tmp_path)
    gc.disable()  # Flower's records hold reference cycles: the server must free each reply itself, not by chance
    try:
        aggregate = strategy.train_round(1, grid, timeout=20)
    finally:
        gc.enable()
    assert aggregate is not None
    assert set(grid.asked) == {1}  # one message ID per pull
    assert max(grid.alive_at_pull) == 0  # every earlier reply was dropped before the next pull
    # the streamed sum is the whole-reply sum (the old aggregate_train's), bit for bit
    weights = fedavg_weights(SAMPLES)
    whole = {i: ({"plain_parts": 0}, _blobs(v)) for i, v in vectors.items()}
    blobs, plain_parts = sum_updates(PLAIN, whole, weights)
    streamed, clear = update_parts(aggregate, PLAIN_STYPE)
    assert clear == () and plain_parts == 0 and streamed == blobs
    record = strategy._round_record
    assert record["selected"] == list(range(CLIENTS)) and "dropped" not in record  # no faults: no fault fields


def test_nodes_that_left_are_out_of_the_sum_and_named_in_the_record(tmp_path, identity):
    vectors = _vectors()
    left = {1: "before_train", 2: "after_train", 3: "after_upload"}
    grid = FakeGrid(vectors, left)
    strategy = _strategy(tmp_path)
    aggregate = strategy.train_round(1, grid, timeout=20)
    assert aggregate is not None
    record = strategy._round_record
    assert record["arrived"] == [0, 3] and record["skipped"] is False
    assert record["dropped"] == {"1": "before_train", "2": "after_train", "3": "after_upload"}
    assert set(record["weights"]) == {"0", "3"} and sum(record["weights"].values()) == pytest.approx(1)
    weights = fedavg_weights(SAMPLES)
    total = weights[0] + weights[3]
    blobs, _ = update_parts(aggregate, PLAIN_STYPE)
    summed = np.concatenate([PLAIN.decrypt(PLAIN.deserialize(b)) for b in blobs])
    # the sum carries the survivors' original weights; nodes divide by their total, as on the local runtime
    np.testing.assert_allclose(summed / total, (30 * vectors[0] + 15 * vectors[3]) / 45, rtol=1e-6)
    (message,) = strategy.configure_evaluate(1, aggregate, ConfigRecord(), grid)[:1]
    config = message.content.config_records["config"]
    assert config[WEIGHT_TOTAL] == pytest.approx(total) and SKIPPED not in config
    assert set(json.loads(str(config[WEIGHTS]))) == {"0", "3"}


def test_a_round_below_min_clients_is_skipped_and_the_nodes_keep_their_global_model(tmp_path, identity):
    grid = FakeGrid(_vectors(), {0: "before_train", 1: "after_train", 2: "before_train"})
    strategy = _strategy(tmp_path, min_clients=2)
    assert strategy.train_round(1, grid, timeout=20) is None
    record = strategy._round_record
    assert record["skipped"] is True and record["arrived"] == [3] and record["weights"] == {}
    assert record["aggregate_bytes"] == 0
    messages = strategy.configure_evaluate(1, ArrayRecord(), ConfigRecord(), grid)
    assert len(messages) == CLIENTS
    config = messages[0].content.config_records["config"]
    assert config[SKIPPED] is True and config[GLOBAL_DIGEST] == INITIAL_DIGEST  # no aggregate yet: the initial model
    assert len(messages[0].content.array_records["arrays"]) == 0


def test_a_node_that_never_replies_is_named(tmp_path, identity):
    vectors = _vectors()
    grid = FakeGrid(vectors)
    grid.done = {3}  # node 3's reply never comes
    strategy = _strategy(tmp_path)
    with pytest.raises(PartyError, match=r"no training reply from client\(s\) 3"):
        strategy.train_round(1, grid, timeout=5)


COMPACT = {"bits": 16, "clip": 2.0, "max_summands": CLIENTS}


@pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")
def test_compact_nodes_weigh_before_encryption_so_unequal_counts_need_no_headroom(tmp_path, identity):
    """Counts 30/10/5/15 need a common denominator of 12 at the server (above max_summands = 4: refused); each
    node applies its weight before encryption instead (PRE), and the server adds the uploads with weight 1."""
    from hebench.fl.cipher import KeyHolderCipher
    from hebench.fl.meter import PhaseMeter
    from hebench.runtime.flower.plan import PRE
    from hebench.runtime.flower.strategy import HEFedAvg

    configuration = {"mode": "host-he", "adapter": "seal-bfv", "params": COMPACT}
    suite = parse_suite({**json.loads(_suite().model_dump_json()), "configurations": [configuration]})
    plan = FlowerPlan(suite, 0, "run-1", ("127.0.0.1", 1), ("127.0.0.1", 2), str(tmp_path))
    keys = create_adapter("seal-bfv", plan.config.adapter_params)
    keys.keygen()
    strategy = HEFedAvg(plan, FakeHub(keys.export_keys(secret=False)))  # type: ignore[arg-type]
    rng = np.random.default_rng(5)
    vectors = {i: rng.uniform(-0.5, 0.5, size=50).astype(np.float32) for i in range(CLIENTS)}
    grid = FakeGrid(vectors)
    messages = list(strategy.configure_train(1, ArrayRecord(), ConfigRecord(), grid))
    assert strategy.samples == SAMPLES  # stated in the partition query
    cipher = KeyHolderCipher(lambda epoch: keys, require_secret=True)
    replies = []
    for m in messages:
        i = grid.partition_of[m.metadata.dst_node_id]
        pre = PreWeight.from_json(json.loads(str(m.content.config_records["config"][PRE])))
        blobs = tuple(cipher.encrypt_stream([vectors[i]], 0, PhaseMeter(), 4096, pre))
        metrics = MetricRecord({"num-examples": SAMPLES[i], CLIENT: i})
        replies.append(Message(RecordDict({"arrays": update_record(blobs, ()), "metrics": metrics}), reply_to=m))
    aggregate = strategy.aggregate_replies(1, list(range(CLIENTS)), iter(replies))
    assert aggregate is not None
    blobs, _ = update_parts(aggregate)
    got = np.concatenate([keys.decrypt(keys.deserialize(b)) for b in blobs])
    want = sum(SAMPLES[i] * v.astype(np.float64) for i, v in vectors.items()) / sum(SAMPLES.values())
    assert np.max(np.abs(got - want)) <= keys.info().precision


class GoneGrid(FakeGrid):
    """A FakeGrid whose SuperNodes ``gone`` are dead: Flower answers their messages with NODE_UNAVAILABLE (once
    their heartbeat is overdue) and, with ``unlisted``, no longer lists them."""

    def __init__(self, vectors: dict[int, np.ndarray], gone: set[int]) -> None:
        super().__init__(vectors)
        self.gone, self.unlisted = gone, False

    def get_node_ids(self):
        return [n for n, i in self.partition_of.items() if not (self.unlisted and i in self.gone)]

    def pull_messages(self, message_ids):
        from flwr.app import Error
        from flwr.common.constant import ErrorCode

        (message_id,) = message_ids
        asked = self.pushed[message_id]
        i = self.partition_of[asked.metadata.dst_node_id]
        if i not in self.gone:
            return super().pull_messages(message_ids)
        if i in self.done:
            return []
        self.done.add(i)
        return [Message(Error(ErrorCode.NODE_UNAVAILABLE, "Node Unavailable"), reply_to=asked)]

    def _waiting(self) -> set[int]:
        return super()._waiting() - (self.gone if self.unlisted else set())  # a node sent nothing never replies


def test_a_node_flower_reports_unavailable_is_lost_for_this_round_and_the_next(tmp_path, identity):
    vectors = _vectors()
    grid = GoneGrid(vectors, gone={2})
    strategy = _strategy(tmp_path)
    assert strategy.train_round(1, grid, timeout=20) is not None
    record = strategy._round_record
    assert (
        record["arrived"] == [0, 1, 3]
        and record["dropped"] == {"2": "lost"}
        and set(record["weights"]) == {"0", "1", "3"}
    )
    (note,) = [r for r in strategy.hub.recorded if r["kind"] == "party_error"]  # the runner's party_lost
    assert note["role"] == "client-2" and "unavailable" in note["problem"]
    grid.unlisted, grid.done = True, set()  # the node is gone from Flower's list: no message is sent to it again
    pushed = len(grid.pushed)
    assert strategy.train_round(2, grid, timeout=20) is not None
    assert len(grid.pushed) - pushed == CLIENTS - 1
    assert strategy._round_record["dropped"] == {"2": "lost"} and strategy._round_record["selected"] == [0, 1, 2, 3]
    evaluate = strategy.configure_evaluate(2, ArrayRecord(), ConfigRecord(), grid)
    assert sorted(grid.partition_of[m.metadata.dst_node_id] for m in evaluate) == [0, 1, 3]
    assert len([r for r in strategy.hub.recorded if r["kind"] == "party_error"]) == 1  # noted once


def test_a_lost_client_0_ends_the_run_with_a_clear_error(tmp_path, identity):
    grid = GoneGrid(_vectors(), gone={0})
    with pytest.raises(PartyError, match="client 0 evaluates every global model"):
        _strategy(tmp_path).train_round(1, grid, timeout=20)
