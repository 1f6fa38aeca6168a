"""The outermost client mod: encrypts what the ClientApp returns and decrypts what arrives.

Training replies leave as ciphertext Arrays (``hebench.ciphertext``); the
ClientApp inside only ever sees and returns plaintext. The mod measures its
phases with the same meter as local runs and sends each round's record (and,
with ``measure.decryption_error``, the out-of-band oracle vectors) to the hub.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict
from flwr.clientapp.typing import ClientAppCallable

from hebench.crypto.exact_weights import PreWeight
from hebench.errors import PartyError
from hebench.fl.chunks import chunks_of
from hebench.fl.cipher import Cipher
from hebench.fl.client import renormalised
from hebench.fl.meter import PhaseMeter, merge_phases
from hebench.fl.update import layer_sizes
from hebench.fl.update import split as split_layers
from hebench.fl.value_range import RangeFit, ValueRange
from hebench.protections.selective.split import PLAIN, join, split
from hebench.protections.spec import resolve
from hebench.results.records import QUALITY_FIELDS
from hebench.runtime.flower.ciphers import merged_engine_report
from hebench.runtime.flower.client_party import NodeParty, digest_of, node_party
from hebench.runtime.flower.codec import (
    CIPHER_STYPE,
    PLAIN_STYPE,
    model_record,
    model_vector,
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
    PRE,
    ROUND,
    SKIPPED,
    START_DIGEST,
    WEIGHT_TOTAL,
)

HANDLED = (MessageType.TRAIN, MessageType.EVALUATE, MAP_QUERY, MASK_QUERY)


def hebench_mod(msg: Message, context: Context, call_next: ClientAppCallable) -> Message:
    """Flower client mod: put it outermost (first) in ``ClientApp(mods=[...])``."""
    kind = msg.metadata.message_type
    if kind not in HANDLED or not msg.has_content():
        return call_next(msg, context)
    step = ClientStep(node_party(context), context)
    try:
        if kind == MessageType.TRAIN:
            return step.train(msg, call_next)
        if kind == MessageType.EVALUATE:
            return step.evaluate(msg, call_next)
        if kind == MAP_QUERY:
            return step.score_map(msg, call_next)
        return step.agree_mask(msg, call_next)
    finally:
        step.close()


class ClientStep:
    """One message's work for one node."""

    def __init__(self, party: NodeParty, context: Context) -> None:
        self.party, self.context = party, context
        # a virtual node (simulation) shares its worker process: it is charged its own thread's CPU
        plan, self.meter = party.plan, PhaseMeter(worker=party.node.worker)
        spec = plan.config.spec
        with self.meter.phase("connect"):
            hello = {"role": "client", "client": party.index}
            node = party.node
            self.hub = HubLink.open(
                plan.hub_holders, node.read_hub_ca(), node.read_credential(), hello, plan.suite.measure.timeout_s
            )
            self.hub.channel.record_to(plan.transcript(f"client-{party.index}-keys"))
            self.cipher: Cipher = resolve(spec.flower_cipher or "")(plan, party.node, self.hub, context.state)
        self.stype = CIPHER_STYPE if spec.encrypts else PLAIN_STYPE
        self.range = ValueRange.of(plan.config)  # compact adapters: per-tensor scales and counted saturation
        self.range_scale_max: float | None = None  # the largest scale of the aggregate this step opened

    def close(self) -> None:
        self.cipher.close()
        self.hub.close()

    # --- the global model ---------------------------------------------------------------

    def global_model(self, content: RecordDict, config: ConfigRecord) -> np.ndarray:
        """The plaintext aggregate: decrypted from the message, or kept from this round's evaluate message."""
        arrays = content.array_records.get("arrays")
        if arrays is None or len(arrays) == 0:
            cached = self.party.cached_global(self.context, str(config.get(GLOBAL_DIGEST, "")))
            if cached is None:
                raise PartyError(
                    "a training message without the global model, and this node holds no matching aggregate",
                    "the strategy sends each aggregate in the evaluate step: evaluate every node each round",
                )
            return cached
        cipher, plain = update_parts(arrays, self.stype)
        digest = digest_of(cipher + plain)
        cached = self.party.cached_global(self.context, digest)
        if cached is not None:
            return cached
        decrypted = self._decrypt(cipher, int(config[AGG_EPOCH]))
        with self.meter.phase("deserialize"):
            clear = [PLAIN.decrypt(PLAIN.deserialize(b)) for b in plain]
        vector = join(decrypted, np.concatenate(clear) if clear else np.empty(0), self.party.mask(self.context))
        weight_total = float(config.get(WEIGHT_TOTAL, 1.0))
        if weight_total != 1.0:  # FedAvg over the survivors: the sum carries their weights only (as on local)
            vector = renormalised(vector, weight_total)
        if self.range is not None:  # undo the scales the round's updates were sent with (the same round's fit)
            start = config.get(START_DIGEST)
            if start is None:
                raise PartyError(
                    "an aggregate of a compact adapter arrived without the digest of the model its round started from",
                    "run every party with the same hebench version (the strategy names it in the evaluate step)",
                )
            fit = self._fit(self._held_global(str(start)))
            fit.restore(vector)
            self.range_scale_max = fit.largest
        self.party.keep_global(self.context, digest, vector)
        return vector

    def _held_global(self, digest: str) -> np.ndarray:
        """The global model this node holds under ``digest`` (the initial model before any aggregate)."""
        if digest == INITIAL_DIGEST:
            return self.party.initial_global(self.context)
        held = self.party.cached_global(self.context, digest)
        if held is None:
            raise PartyError(
                "an evaluate message names a global model (the round's start) this node does not hold",
                "the strategy sends each aggregate in the evaluate step: evaluate every node each round",
            )
        return held

    def _fit(self, start: np.ndarray) -> RangeFit:
        """The round's per-tensor range scales, from the global model it started from (as a local client's)."""
        assert self.range is not None
        return self.range.fit_vector(start, layer_sizes(self.party.local.model, "per-layer"))

    def _decrypt(self, blobs: tuple[bytes, ...], epoch: int) -> np.ndarray:
        """An aggregate's ciphertext chunks decrypted one at a time (one chunk's ciphertext in memory)."""
        parts = [self.cipher.decrypt_chunk(b, epoch, self.meter) for b in blobs]
        return np.concatenate(parts).astype(np.float32, copy=False) if parts else np.empty(0, np.float32)

    def _encrypt(
        self,
        vector: np.ndarray,
        mask: np.ndarray | None,
        epoch: int,
        per_layer: bool,
        pre: PreWeight | None = None,
        fit: RangeFit | None = None,
        fields: dict[str, Any] | None = None,
    ) -> ArrayRecord:
        """The update as one Array per streamed chunk (``runtime.chunk_values`` values, whole ciphertexts);
        ``pre``: this node's FedAvg weight, applied before encryption (compact adapters); ``fit``: the round's range
        scales, already applied to ``vector`` (this node's own copy): its encrypted values beyond the clip saturate,
        in place, counted in ``fields["clipped_values"]``."""
        encrypted, plain = split(vector, mask)
        if fit is not None:
            encrypted, clipped = fit.saturate(encrypted, in_place=True)
            if fields is not None:
                fields["clipped_values"] = clipped
        sizes = layer_sizes(self.party.local.model, "per-layer") if per_layer else [len(encrypted)]
        per_chunk = self.party.plan.suite.runtime.chunk_values
        cipher = tuple(self.cipher.encrypt_stream(split_layers(encrypted, sizes), epoch, self.meter, per_chunk, pre))
        with self.meter.phase("serialize"):
            clear = tuple(PLAIN.serialize(PLAIN.encrypt(c)) for c in chunks_of([plain], per_chunk))
        return update_record(cipher, clear, self.stype)

    def _part(self, **fields: Any) -> dict[str, Any]:
        """This step's share of a record: fields, phases, and the engine's work (offload)."""
        taken = self.meter.take()
        part = {**fields, **taken}
        if self.party.node.worker is None:
            # Flower starts a ClientApp process per message: its whole CPU (start-up, imports, data) so far
            process = os.times()
            part["process_cpu_s"] = process.user + process.system
        engine = merged_engine_report(self.cipher.engine_reports)
        if engine is not None:
            part["engine"], part["host_engine_bytes"] = engine, self.cipher.engine_bytes
        return part

    # --- message kinds ------------------------------------------------------------------

    def train(self, msg: Message, call_next: ClientAppCallable) -> Message:
        """Train from the global model and reply with the encrypted update, or leave where this round's drawn
        fault says (:mod:`hebench.faults`, as the local runtime's client): ``before_train`` (no work),
        ``after_train`` or late against ``training.round_deadline_s`` (trained, nothing sent, DP not charged),
        ``after_upload`` (the update is sent, and the node is recorded as having left). A node that left
        replies with the phase (config record ``fault``, key ``LEFT``) and no update. A straggler's training
        takes ``slowdown`` times as long."""
        config = msg.content.config_records["config"]
        r, epoch = int(config[ROUND]), int(config[EPOCH])
        received, fault = payload_bytes(msg.content), self.party.fault(r)
        fields: dict[str, Any] = {} if fault.slowdown == 1.0 else {"slowdown": fault.slowdown}
        if fault.dropout_phase == "before_train":
            return self._leave(msg, r, epoch, "before_train", received, fields)
        inner = RecordDict({"config": config})
        start = (
            self.party.initial_global(self.context) if config.get(INITIAL) else self.global_model(msg.content, config)
        )
        inner["arrays"] = model_record(start)
        fit = self._fit(start) if self.range is not None else None  # from the round's global model, as on local
        del start
        msg.content = inner
        told = time.perf_counter()
        with self.meter.phase("train"):
            reply = call_next(msg, self.context)
            if fault.slowdown > 1.0:  # a slower device: the same work takes longer in wall time
                time.sleep((fault.slowdown - 1.0) * (time.perf_counter() - told))
        if reply.has_error():
            return reply
        deadline = self.party.plan.suite.training.round_deadline_s
        if fault.dropout_phase == "after_train" or (deadline is not None and time.perf_counter() - told > deadline):
            self.party.local.withdraw_charge()  # nothing trained leaves this node: DP charges none of it
            phase = "after_train" if fault.dropout_phase == "after_train" else "late"
            return self._leave(msg, r, epoch, phase, received, fields)
        self.party.local.release_charge()
        metrics: MetricRecord = reply.content.metric_records["metrics"]
        update = model_vector(reply.content.array_records["arrays"])
        if fit is not None:  # the decoded reply is this node's own copy (the oracle's went to the sink): in place
            update = fit.scaled(update if update.flags.writeable else update.copy(), in_place=True)
        per_layer = self.party.plan.config.packing == "per-layer"
        pre = PreWeight.from_json(json.loads(str(config[PRE]))) if PRE in config else None
        record = self._encrypt(update, self.party.mask(self.context), epoch, per_layer, pre, fit, fields)
        reply.content = RecordDict({"arrays": record, "metrics": metrics})
        if fault.dropout_phase == "after_upload":  # its update counts; it leaves once sent
            reply.content["fault"] = ConfigRecord({LEFT: "after_upload"})
            fields["dropout_phase"] = "after_upload"
        self.hub.records(self.party.sink.drain())  # the oracle copy of the update, out of band
        part = self._part(round=r, epoch=epoch, bytes_sent=payload_bytes(reply.content), bytes_received=received)
        part["train_loss"] = float(metrics.get("train-loss", float("nan")))
        self.party.keep_pending(self.context, {**part, **fields})
        return reply

    def _leave(self, msg: Message, r: int, epoch: int, phase: str, received: int, fields: dict[str, Any]) -> Message:
        """The reply of a node that left the round at ``phase``: its partition and the phase, no update."""
        self.party.sink.drain()  # an oracle copy of an update that never left is not the aggregate's
        metrics = MetricRecord({CLIENT: self.party.index, "num-examples": self.party.local.samples})
        content = RecordDict({"metrics": metrics, "fault": ConfigRecord({LEFT: phase})})
        part = self._part(round=r, epoch=epoch, bytes_sent=payload_bytes(content), bytes_received=received)
        self.party.keep_pending(self.context, {**part, **fields, "dropout_phase": phase})
        return Message(content, reply_to=msg)

    def evaluate(self, msg: Message, call_next: ClientAppCallable) -> Message:
        config = msg.content.config_records["config"]
        r = int(config[ROUND])
        received = payload_bytes(msg.content)
        skipped = bool(config.get(SKIPPED))
        if skipped:  # too few arrived: the global model stays the one the round started from
            vector = self._held_global(str(config.get(GLOBAL_DIGEST, INITIAL_DIGEST)))
        else:
            vector = self.global_model(msg.content, config)
        msg.content = RecordDict({"config": config, "arrays": model_record(vector)})
        with self.meter.phase("evaluate"):
            reply = call_next(msg, self.context)
        if reply.has_error():
            return reply
        self.hub.records(self.party.sink.drain())  # client 0: the decrypted aggregate, for the error check
        metrics = reply.content.metric_records["metrics"]
        part = self._part(bytes_sent=payload_bytes(reply.content), bytes_received=received)
        part.update({k: float(v) for k, v in metrics.items() if k in QUALITY_FIELDS})
        if skipped:
            part["skipped"] = True
        if self.range_scale_max is not None:
            part["range_scale_max"] = self.range_scale_max
        trained = self.party.pending(self.context)
        self.party.keep_pending(self.context, None)
        self.hub.record(round_record(self.party.index, r, trained if trained and trained["round"] == r else None, part))
        return reply

    def score_map(self, msg: Message, call_next: ClientAppCallable) -> Message:
        config = msg.content.config_records["config"]
        received = payload_bytes(msg.content)
        with self.meter.phase("map"):
            reply = call_next(msg, self.context)
        if reply.has_error():
            return reply
        local = model_vector(reply.content.array_records["arrays"])
        record = self._encrypt(local, None, int(config[EPOCH]), per_layer=False)
        reply.content = RecordDict({"arrays": record, "metrics": reply.content.metric_records["metrics"]})
        part = self._part(round=-1, bytes_sent=payload_bytes(reply.content), bytes_received=received)
        self.party.keep_pending(self.context, part)
        return reply

    def agree_mask(self, msg: Message, call_next: ClientAppCallable) -> Message:
        config = msg.content.config_records["config"]
        received = payload_bytes(msg.content)
        cipher, _ = update_parts(msg.content.array_records["arrays"], self.stype)
        summed = self._decrypt(cipher, int(config[EPOCH]))
        msg.content = RecordDict({"config": config, "arrays": model_record(summed)})
        reply = call_next(msg, self.context)
        if reply.has_error():
            return reply
        mask = self.party.mask(self.context)
        assert mask is not None
        part = self._part(bytes_sent=payload_bytes(reply.content), bytes_received=received)
        record = round_record(self.party.index, -1, self.party.pending(self.context), part)
        self.party.keep_pending(self.context, None)
        record.update(
            kind="mask_agreement",
            encrypted_fraction=float(mask.mean()),
            mask_sha256=self.party.local.mask_digest(mask),
        )
        record.pop("round")
        self.hub.record(record)
        return reply


def round_record(client: int, r: int, first: dict[str, Any] | None, second: dict[str, Any]) -> dict[str, Any]:
    """A client's record for round ``r``: its training half (if it trained) merged with its aggregate half."""
    out: dict[str, Any] = {"kind": "party_round", "role": "client", "client": client, "round": r}
    halves = [h for h in (first, second) if h]
    for half in halves:
        for key, value in half.items():
            if key not in ("phases", "bytes_sent", "bytes_received", "engine", "host_engine_bytes", "round"):
                out[key] = value
    out["phases"] = merge_phases(halves)
    if any("process_cpu_s" in h for h in halves):  # not for virtual nodes sharing a worker process
        out["process_cpu_s"] = sum(h.get("process_cpu_s", 0.0) for h in halves)
    out["bytes_sent"] = sum(h["bytes_sent"] for h in halves)
    out["bytes_received"] = sum(h["bytes_received"] for h in halves)
    engines = [h["engine"] for h in halves if "engine" in h]
    if engines:
        out["engine"] = merged_engine_report(engines)
        out["host_engine_bytes"] = sum(h.get("host_engine_bytes", 0) for h in halves)
    out["peak_rss_bytes"] = max(h["peak_rss_bytes"] for h in halves)
    return out
