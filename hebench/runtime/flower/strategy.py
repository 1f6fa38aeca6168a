"""A Flower strategy that averages encrypted updates with public keys only.

``aggregate_train`` never decodes arrays: it reads each reply's ciphertext
bytes (and, for selective updates, the plaintext part), weights them by the
reply's sample count and adds them under encryption, with the epoch's public
key set from the hub. The aggregate goes back to every node in the evaluate
step, where each node's mod decrypts it once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from logging import INFO
from pathlib import Path
from typing import Any

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.common.constant import ErrorCode
from flwr.common.logger import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvg

from hebench.crypto.base import HEAdapter
from hebench.crypto.exact_weights import PreWeight, pre_weights
from hebench.errors import PartyError
from hebench.fl.aggregator import selected_clients, survivors_weighted
from hebench.fl.fedavg import fedavg_weights
from hebench.fl.keyring import epoch_of
from hebench.fl.meter import PhaseMeter
from hebench.fl.running_sum import RunningSum
from hebench.net.messages import MessageKind
from hebench.net.transport import Message as WireMessage
from hebench.net.transport import encode, write_frame
from hebench.runtime.flower.client_party import digest_of
from hebench.runtime.flower.codec import (
    CIPHER_STYPE,
    PLAIN_STYPE,
    content_bytes,
    payload_bytes,
    update_parts,
    update_record,
)
from hebench.runtime.flower.hub_link import HubLink
from hebench.runtime.flower.plan import (
    AGG_EPOCH,
    CLIENT,
    EPOCH,
    GLOBAL_DIGEST,
    INITIAL,
    INITIAL_DIGEST,
    LEFT,
    MAP_QUERY,
    MASK_QUERY,
    PARTITION_QUERY,
    PRE,
    ROUND,
    SKIPPED,
    START_DIGEST,
    WEIGHT_TOTAL,
    WEIGHTS,
    FlowerPlan,
)
from hebench.runtime.flower.replies import pulled_one_by_one, record_of

LOST = "lost"  # the phase a client whose SuperNode is gone left at (as a killed client process on the local runtime)


class HEFedAvg(FedAvg):
    POLL_S = 0.2  # between passes over the replies not yet in (each pass: one pull per missing reply)

    def __init__(
        self, plan: FlowerPlan, hub: HubLink, transcript: Path | None = None, worker: str | None = None
    ) -> None:
        """``worker``: the process the strategy shares (simulation); its phases are then charged thread CPU."""
        suite = plan.suite
        clients, per_round = suite.data.clients, suite.training.clients_per_round or suite.data.clients
        super().__init__(
            fraction_train=per_round / clients,
            fraction_evaluate=1.0,  # every node receives (and decrypts) every aggregate
            min_train_nodes=per_round,
            min_evaluate_nodes=clients,
            min_available_nodes=clients,
        )
        self.plan, self.hub = plan, hub
        self.stype = CIPHER_STYPE if plan.config.spec.encrypts else PLAIN_STYPE
        self.meter = PhaseMeter(worker=worker)
        self._adapters: dict[int, HEAdapter] = {}
        self._aggregate: dict[str, Any] = {}  # the current aggregate's epoch, weights and digest
        self._round_started = 0.0
        self._traffic = {"bytes_received": 0, "bytes_sent": 0}
        self._round_record: dict[str, Any] = {}
        self._partition_of: dict[int, int] = {}  # node ID -> the suite client (partition) it hosts
        self.samples: dict[int, int] = {}  # partition -> the sample count its node stated (the FedAvg weights)
        self.pre_weights: dict[int, PreWeight] = {}  # this round's, where nodes weigh before encryption
        self._skipped = False  # the last training step had too few arrivals: no aggregate
        self._start_digest = INITIAL_DIGEST  # the global model the current round started from
        self._transcript = transcript.open("ab") if transcript else None  # every reply, as received
        self._lost: set[int] = set()  # partitions whose SuperNode is gone: dropouts from then on
        self._chosen: list[int] = []  # this round's selection (partitions), its lost clients included
        self._sent: dict[str, int] = {}  # message ID -> partition, of this step's messages

    # --- keys ---------------------------------------------------------------------------

    def adapter(self, epoch: int) -> HEAdapter:
        if epoch not in self._adapters:
            with self.meter.phase("keys"):
                adapter = self.hub.adapter(epoch, secret=False)
            if adapter.has_secret_key and self.plan.config.spec.encrypts:
                raise PartyError("the server was handed a secret key", "the hub must send the server public keys only")
            self._adapters = {epoch: adapter}  # an older epoch is never needed again
        return self._adapters[epoch]

    @property
    def holds_secret_key(self) -> bool:
        return self.plan.config.spec.encrypts and any(a.has_secret_key for a in self._adapters.values())

    # --- selective mask agreement -------------------------------------------------------

    def agree_mask(self, grid: Grid, timeout: float) -> None:
        """FedML-HE's agreement: sum the nodes' encrypted score maps, send every node the sum."""
        if not (self.plan.config.selective and self.plan.config.selective.needs_agreement):
            return
        epoch = epoch_of(0, self.plan.suite.training.key_rotation_rounds)
        adapter = self.adapter(epoch)
        config = ConfigRecord({EPOCH: epoch})
        nodes = self._all_nodes(grid)
        total = RunningSum(adapter, fedavg_weights({p: 1 for p in range(self.plan.suite.data.clients)}))  # one each
        ids = list(grid.push_messages(self._messages(nodes, MAP_QUERY, config)))
        for reply in pulled_one_by_one(grid, ids, timeout, self.POLL_S):  # summed as they come, as updates are
            self._add_map(reply, total)
            del reply
        with self.meter.phase("aggregate"):
            blobs, _ = total.blobs()
        record = update_record(blobs, (), self.stype)
        self._replies(grid.send_and_receive(self._messages(nodes, MASK_QUERY, config, record), timeout=timeout))
        self.hub.record({"kind": "mask_agreement", "role": "aggregator", **self.meter.take()})

    # --- training -----------------------------------------------------------------------

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        self._round_started = time.perf_counter()
        self._partitions(grid)  # fail with a reason instead of waiting forever in Flower's sampling
        self._traffic = {"bytes_received": 0, "bytes_sent": 0}
        r = server_round - 1
        epoch = epoch_of(r, self.plan.suite.training.key_rotation_rounds)
        adapter = self.adapter(epoch)
        config = ConfigRecord({ROUND: r, EPOCH: epoch})
        self._start_digest = self._aggregate.get("digest", INITIAL_DIGEST)  # the model this round starts from
        if self._aggregate:  # every node received the aggregate in the evaluate step: name it, do not resend it
            config[GLOBAL_DIGEST] = self._aggregate["digest"]
        else:
            config[INITIAL] = True  # nodes start from the suite's seeded model
        config["server-round"] = server_round
        nodes = self._sampled_nodes(grid, r)
        self.pre_weights = self.pre_weights_for(self._chosen, adapter)  # fixed up front, as the FedAvg weights
        if self.pre_weights:  # each node its own weight: a message of its own
            messages = []
            for n in nodes:
                own = ConfigRecord({**config, PRE: json.dumps(self.pre_weights[self._partition_of[n]].to_json())})
                content = RecordDict({self.arrayrecord_key: ArrayRecord(), self.configrecord_key: own})
                messages.append(Message(content=content, message_type=MessageType.TRAIN, dst_node_id=n))
        else:
            record = RecordDict({self.arrayrecord_key: ArrayRecord(), self.configrecord_key: config})
            messages = list(self._construct_messages(record, nodes, MessageType.TRAIN))
        self._traffic["bytes_sent"] += sum(payload_bytes(m.content) for m in messages)
        return messages

    def pre_weights_for(self, chosen: list[int], adapter: HEAdapter) -> dict[int, PreWeight]:
        """Each chosen node's FedAvg weight to apply before encryption, where the adapter can and the node holds
        its keys (host-he; an offload engine takes no weight): then an aggregate needs headroom for the number
        of clients, whatever their sample counts (:mod:`hebench.crypto.exact_weights`), as on the local runtime."""
        spec = self.plan.config.spec
        if not (adapter.weighs_before_encryption and spec.encrypts and not spec.needs_engines):
            return {}
        return pre_weights({i: self.samples[i] for i in chosen}, adapter.levels)  # type: ignore[attr-defined]

    def run(self, grid: Grid, timeout: float) -> None:
        """Every round: the training step (replies pulled and summed one at a time), then the aggregate (or that
        the round was skipped) to every node, which evaluates it. Flower's ``start`` would instead hand the
        strategy every training reply at once (``send_and_receive``): the server would hold them all."""
        rounds = self.plan.suite.training.rounds
        for server_round in range(1, rounds + 1):
            log(INFO, "")
            log(INFO, "[ROUND %s/%s]", server_round, rounds)  # as Flower's own loop logs each round
            aggregate = self.train_round(server_round, grid, timeout)
            messages = self.configure_evaluate(server_round, aggregate or ArrayRecord(), ConfigRecord(), grid)
            del aggregate
            sent = [self._partition_of[m.metadata.dst_node_id] for m in messages]
            self._sent = dict(zip(grid.push_messages(messages), sent, strict=True))
            del messages
            replies = pulled_one_by_one(grid, list(self._sent), timeout, self.POLL_S)
            self.aggregate_evaluate(server_round, [m for m in replies if not self._gone(m, server_round - 1)])

    def train_round(self, server_round: int, grid: Grid, timeout: float) -> ArrayRecord | None:
        """Send the round's training messages, add each reply into the running sum as it is pulled; the aggregate
        (None: the round was skipped)."""
        messages = list(self.configure_train(server_round, ArrayRecord(), ConfigRecord(), grid))
        sent = [self._partition_of[m.metadata.dst_node_id] for m in messages]
        self._sent = dict(zip(grid.push_messages(messages), sent, strict=True))
        del messages
        replies = pulled_one_by_one(grid, list(self._sent), timeout, self.POLL_S)
        return self.aggregate_replies(server_round, self._chosen, replies)

    def aggregate_replies(self, server_round: int, chosen: list[int], replies: Iterable[Message]) -> ArrayRecord | None:
        """FedAvg of the survivors among ``chosen``, their replies consumed one at a time: each is weighted, added
        into a :class:`~hebench.fl.running_sum.RunningSum` and dropped before the next, so the server holds the
        sum and one reply whatever the number of clients. The weights (the sample counts the nodes stated, known
        before the round) are fixed up front; nodes that left (:mod:`hebench.faults`) are left out of the sum and
        the evaluate step tells the nodes what the survivors' weights add up to (they divide by it, as on the
        local runtime). A chosen client whose SuperNode is gone (before the round, or Flower's NODE_UNAVAILABLE
        reply in its place) left at phase 'lost'. Fewer arrivals than ``training.min_clients``: the round is
        skipped (None)."""
        suite, r = self.plan.suite, server_round - 1
        epoch = epoch_of(r, suite.training.key_rotation_rounds)
        weights = fedavg_weights({i: self.samples[i] for i in chosen})
        weighed = {i: 1.0 for i in chosen} if self.pre_weights else None  # the nodes applied their weights
        total = RunningSum(self.adapter(epoch), weights, weighed)
        left: dict[int, str] = {}  # nodes that replied without an update: the phase they left at
        after_upload: dict[int, str] = {}  # nodes whose update is in the sum and that left once it was sent
        for i in chosen:
            if i in self._lost:  # its SuperNode was gone before the round: no message was sent
                total.drop(i)
                left[i] = LOST
        for reply in replies:
            if self._gone(reply, r):
                i = self._sent[reply.metadata.reply_to_message_id]
                total.drop(i)
                left[i] = LOST
            else:
                self._add_reply(reply, total, left, after_upload)
            del reply  # before the next is pulled
        missing = sorted(set(chosen) - total.added - total.dropped)
        if missing:
            raise PartyError(
                f"no training reply from client(s) {', '.join(map(str, missing[:5]))} within the timeout",
                "check the SuperNodes' logs; raise measure.timeout_s for slow adapters",
            )
        arrived = [i for i in chosen if i not in left]
        skipped = len(arrived) < (suite.training.min_clients or 1)
        self._skipped = skipped
        aggregate, aggregate_bytes, plain_parts, wire_weights = None, 0, 0, {}
        if not skipped:
            with self.meter.phase("aggregate"):
                blobs, plain_parts = total.blobs()
            cut = len(blobs) - plain_parts
            aggregate = update_record(blobs[:cut], blobs[cut:], self.stype)
            survivors, meta = survivors_weighted(weights, left, total.survivor_weight)
            wire_weights = {str(i): w for i, w in survivors.items()}
            self._aggregate = {"epoch": epoch, "weights": wire_weights, "digest": digest_of(blobs), **meta}
            aggregate_bytes = sum(len(b) for b in blobs)
            del blobs
        self._round_record = {
            "selected": chosen,
            "weights": wire_weights,
            "update_bytes": {str(i): n for i, n in sorted(total.update_bytes.items())},
            "aggregate_bytes": aggregate_bytes,
            "plain_parts": plain_parts,
            "epoch": epoch,
        }
        dropped = {**left, **after_upload}
        if dropped or skipped or suite.faults_for(self.plan.config) is not None:
            self._round_record.update(
                arrived=arrived, dropped={str(i): p for i, p in sorted(dropped.items())}, skipped=skipped
            )
        return aggregate

    def _add_reply(self, reply: Message, total: RunningSum, left: dict[int, str], after_upload: dict[int, str]) -> None:
        """One training reply into ``total`` (or, from a node that left, its phase into ``left``)."""
        (msg,) = self._replies([reply])
        metrics, arrays = record_of(msg.content, "metrics", MetricRecord), record_of(msg.content, "arrays", ArrayRecord)
        fault = record_of(msg.content, "fault", ConfigRecord) or ConfigRecord()  # a node that left: the phase
        if (
            metrics is None
            or CLIENT not in metrics
            or "num-examples" not in metrics
            or (arrays is None and LEFT not in fault)
        ):
            raise PartyError(
                f"node {msg.metadata.src_node_id} replied without hebench's update fields",
                "every SuperNode must run hebench's ClientApp with hebench_mod (the same hebench version)",
            )
        i = int(metrics[CLIENT])
        if arrays is None:  # it left before its update was sent
            total.drop(i)
            left[i] = str(fault[LEFT])
            return
        if int(metrics["num-examples"]) != self.samples.get(i):
            raise PartyError(
                f"client {i} trained on {metrics['num-examples']} samples, but stated {self.samples.get(i)} before",
                "a client's shard must not change during a run",
            )
        with self.meter.phase("deserialize"):
            cipher, plain = update_parts(arrays, self.stype)
        with self.meter.phase("aggregate"):
            total.add(i, ({"plain_parts": len(plain)}, cipher + plain))
        if fault.get(LEFT) == "after_upload":
            after_upload[i] = "after_upload"

    # --- evaluation: the aggregate goes to every node ----------------------------------

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        agg = self._aggregate
        if self._skipped:  # the nodes keep the global model the round started from
            digest = agg.get("digest", INITIAL_DIGEST)
            config = ConfigRecord({ROUND: server_round - 1, WEIGHTS: "{}", SKIPPED: True, GLOBAL_DIGEST: digest})
            arrays = ArrayRecord()
        else:
            config = ConfigRecord(
                {ROUND: server_round - 1, AGG_EPOCH: agg["epoch"], WEIGHTS: json.dumps(agg["weights"])}
            )
            if "weight_total" in agg:  # some selected nodes left: the sum carries the survivors' weights only
                config[WEIGHT_TOTAL] = float(agg["weight_total"])
            config[START_DIGEST] = self._start_digest  # compact adapters: the round's range scales come from it
        config["server-round"] = server_round
        record = RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: config})
        nodes = self._live_nodes(grid, server_round - 1)  # every node, but those whose SuperNode is gone
        messages = list(self._construct_messages(record, nodes, MessageType.EVALUATE))
        self._traffic["bytes_sent"] += sum(payload_bytes(m.content) for m in messages)
        return messages

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        valid = self._replies(replies)
        first = next((m for m in valid if int(m.content.metric_records["metrics"][CLIENT]) == 0), None)
        metrics = MetricRecord()
        if first is not None:
            for key in ("accuracy", "loss"):
                if key in first.content.metric_records["metrics"]:
                    metrics[key] = first.content.metric_records["metrics"][key]
        self.hub.record(
            {
                "kind": "party_round",
                "role": "aggregator",
                "round": server_round - 1,
                **self._round_record,
                **self._traffic,
                # Flower's round time includes its polling interval: reported, never compared with local runs
                "flower_round_wall_s": time.perf_counter() - self._round_started,
                "holds_secret_key": self.holds_secret_key,
                **self.meter.take(),
            }
        )
        return metrics

    # --- which nodes train: the local runtime's seeded sample, by partition -------------

    def _sampled_nodes(self, grid: Grid, r: int) -> list[int]:
        """The nodes hosting the clients ``selected_clients`` picks for round ``r`` (every client without sampling).

        Flower's own sampling draws node IDs from its generator; sampling suite clients by the suite's seed
        instead makes a Flower run train the same clients each round as a local run of the same suite.
        The chosen clients whose SuperNode is gone are in ``self._chosen`` but get no message (they are 'lost').
        """
        suite = self.plan.suite
        self._partitions(grid)
        node_of = {self._partition_of[n]: n for n in self._live_nodes(grid, r)}
        chosen = selected_clients(suite.seed, r, suite.data.clients, suite.training.selected_count(suite.data.clients))
        self._chosen = chosen
        return [node_of[i] for i in chosen if i in node_of]

    def _partitions(self, grid: Grid) -> dict[int, int]:
        """Node ID -> partition, asked of every node once (again if a node the run does not know joins); one node
        per partition. Nodes that leave afterwards are lost clients (:meth:`_live_nodes`), not a new mapping."""
        if self._partition_of and set(grid.get_node_ids()) <= set(self._partition_of):
            return self._partition_of
        nodes = self._all_nodes(grid)
        with self.meter.phase("connect"):
            query = self._messages(nodes, PARTITION_QUERY, ConfigRecord())
            replies = self._replies(grid.send_and_receive(query, timeout=self.plan.suite.measure.timeout_s))
        mapping = {m.metadata.src_node_id: int(m.content.metric_records["metrics"][CLIENT]) for m in replies}
        self._partition_of = _checked_partitions(mapping, len(nodes), self.plan.suite.data.clients)
        self.samples = {
            int(m.content.metric_records["metrics"][CLIENT]): int(m.content.metric_records["metrics"]["num-examples"])
            for m in replies
        }
        return self._partition_of

    # --- SuperNodes that are gone: their clients are dropouts ('lost') ------------------

    def _live_nodes(self, grid: Grid, r: int) -> list[int]:
        """The known nodes still connected (by partition), the clients of those that left marked lost. Flower
        keeps a node listed until its heartbeat is overdue (HEARTBEAT_PATIENCE x its interval)."""
        if not self._partition_of:
            return self._all_nodes(grid)
        present = set(grid.get_node_ids())
        for node, i in sorted(self._partition_of.items(), key=lambda item: item[1]):
            if node not in present:
                self._lose(i, r, "its SuperNode left the federation (no heartbeat)")
        return sorted(
            (n for n, i in self._partition_of.items() if n in present and i not in self._lost),
            key=lambda n: self._partition_of[n],
        )

    def _gone(self, reply: Message, r: int) -> bool:
        """Whether ``reply`` is Flower's NODE_UNAVAILABLE in place of a reply to one of this step's messages (its
        SuperNode stopped sending heartbeats: killed, crashed, cut off); the client is then lost."""
        if not reply.has_error() or reply.error.code != ErrorCode.NODE_UNAVAILABLE:
            return False
        i = self._sent.get(reply.metadata.reply_to_message_id)
        if i is None:
            return False  # not a message of ours: :meth:`_replies` names the error
        self._lose(i, r, f"its SuperNode is unavailable ({reply.error.reason})")
        return True

    def _lose(self, i: int, r: int, why: str) -> None:
        """Client ``i`` is out of the run from round ``r`` on: a dropout at phase 'lost' (its rounds complete with
        the others), reported to the run as a lost party. Client 0 evaluates every global model: its loss ends the
        run, as does any loss in a mode that does not go on without a client."""
        if i in self._lost:
            return
        if i == 0 or not self.plan.suite.faults_tolerated(self.plan.config):
            mode = self.plan.config.mode
            role = "client 0 evaluates every global model" if i == 0 else f"{mode} does not go on without a client"
            raise PartyError(f"client {i}: {why}; {role}", f"see the federation's logs (supernode-{i}) and rerun")
        self._lost.add(i)
        problem = f"{why} in round {r}"
        self.hub.record({"kind": "party_error", "role": f"client-{i}", "problem": problem, "fix": ""})

    # --- helpers ------------------------------------------------------------------------

    def _all_nodes(self, grid: Grid) -> list[int]:
        """Every connected node, once all the suite's clients are (Flower itself would wait forever)."""
        deadline = time.monotonic() + self.plan.suite.measure.timeout_s
        while len(nodes := list(grid.get_node_ids())) < self.min_available_nodes:
            if time.monotonic() > deadline:
                raise PartyError(
                    f"only {len(nodes)} of {self.min_available_nodes} SuperNodes connected within "
                    f"{self.plan.suite.measure.timeout_s:.0f} s",
                    "start one SuperNode per suite client (see the federation's logs), or raise measure.timeout_s",
                )
            time.sleep(1)
        return nodes

    def _messages(
        self, nodes: list[int], kind: str, config: ConfigRecord, arrays: ArrayRecord | None = None
    ) -> list[Message]:
        content = RecordDict({"config": config, **({"arrays": arrays} if arrays is not None else {})})
        messages = [Message(content=content, message_type=kind, dst_node_id=n) for n in nodes]
        self._traffic["bytes_sent"] += sum(payload_bytes(m.content) for m in messages)
        return messages

    def _replies(self, replies: Iterable[Message]) -> list[Message]:
        """Valid replies; any node's error stops the run (no silent partial aggregation)."""
        replies = list(replies)
        failed = [m for m in replies if m.has_error()]
        if failed:
            reasons = "; ".join(f"node {m.metadata.src_node_id}: {m.error.reason}" for m in failed)
            raise PartyError(f"{len(failed)} node(s) failed: {reasons}", "see the SuperNode logs")
        if not replies:
            raise PartyError("no node replied in time", "check that the SuperNodes are running and connected")
        self._traffic["bytes_received"] += sum(payload_bytes(m.content) for m in replies)
        if self._transcript:
            for m in replies:
                meta = {"node": m.metadata.src_node_id, "type": m.metadata.message_type}
                write_frame(self._transcript, encode(WireMessage(MessageKind.REPLY, meta, (content_bytes(m.content),))))
        return replies

    def _add_map(self, reply: Message, total: RunningSum) -> None:
        """One node's encrypted score map (selective mask agreement) into ``total``, equally weighted."""
        (msg,) = self._replies([reply])
        metrics, arrays = record_of(msg.content, "metrics", MetricRecord), record_of(msg.content, "arrays", ArrayRecord)
        if metrics is None or arrays is None or CLIENT not in metrics:
            raise PartyError(
                f"node {msg.metadata.src_node_id} replied without hebench's score map fields",
                "every SuperNode must run hebench's ClientApp with hebench_mod (the same hebench version)",
            )
        with self.meter.phase("deserialize"):
            cipher, plain = update_parts(arrays, self.stype)
        with self.meter.phase("aggregate"):
            total.add(int(metrics[CLIENT]), ({"plain_parts": len(plain)}, cipher + plain))


def _checked_partitions(mapping: dict[int, int], asked: int, clients: int) -> dict[int, int]:
    """``mapping`` if every one of ``clients`` partitions is hosted by exactly one of the ``asked`` nodes."""
    fix = f"start exactly one SuperNode per partition-id 0 … {clients - 1} (node config partition-id=I)"
    if len(mapping) < asked:
        raise PartyError(f"{asked - len(mapping)} of {asked} nodes did not say which partition they host", fix)
    nodes_of: dict[int, list[int]] = {}
    for node, part in mapping.items():
        nodes_of.setdefault(part, []).append(node)
    shared = {p: n for p, n in nodes_of.items() if len(n) > 1}
    if shared:
        part, nodes = min(shared.items())
        raise PartyError(f"nodes {', '.join(map(str, sorted(nodes)))} all say partition-id {part}", fix)
    missing = sorted(set(range(clients)) - set(nodes_of))
    if missing:
        raise PartyError(f"no node hosts partition-id {', '.join(map(str, missing[:5]))}", fix)
    extra = sorted(set(nodes_of) - set(range(clients)))
    if extra:
        raise PartyError(f"partition-id {extra[0]} is out of range for data.clients={clients}", fix)
    return mapping
