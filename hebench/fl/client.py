"""A client: trains, hands its update to its link, applies the aggregate. One class for every mode.

What differs between modes (who encrypts, where the bytes go) is the
:class:`~hebench.fl.link.Link` the mode's spec builds; the round itself —
train, split by the selective mask, upload, wait, open, evaluate — is here.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.faults import NO_FAULT, Fault, fault_for
from hebench.faults.link_time import upload_link_s
from hebench.fl.link import Link
from hebench.fl.local_model import LocalModel
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.update import layer_sizes, model_vector
from hebench.fl.update import split as split_layers
from hebench.fl.value_range import RangeFit, ValueRange
from hebench.net.messages import MessageKind
from hebench.net.shaping import scope as shaping
from hebench.net.transport import Message
from hebench.protections.selective.split import join, split
from hebench.protections.spec import resolve
from hebench.results.records import MaskAgreementRecord, PartySetupRecord


class Client:
    def __init__(self, ctx: PartyContext, local: LocalModel, link: Link, meter: PhaseMeter, records: Any) -> None:
        self.ctx, self.local, self.link, self.meter, self.records = ctx, local, link, meter, records
        self.index = ctx.client_index
        self.sizes = layer_sizes(local.model, ctx.config.packing)
        self.mask = local.initial_mask()
        self.range = ValueRange.of(ctx.config)
        self.faults = ctx.suite.faults_for(ctx.config)  # None: this client never drops out or lags
        self.deadline_s = ctx.suite.training.round_deadline_s
        self.may_skip = ctx.suite.rounds_may_skip(ctx.config)  # then the global model is kept until the aggregate
        self.upload_bytes: int | None = None  # what this client's last upload put on its channels

    def fault(self, round_index: int) -> Fault:
        """This client's drawn fault in ``round_index`` (the same in every configuration and runtime)."""
        return NO_FAULT if self.faults is None else fault_for(self.faults, round_index, self.index)

    def _traffic(self) -> tuple[int, int]:
        return self.link.traffic()

    def serve(self) -> None:
        """Follow the instructions arriving on the link until the run is done."""
        while (msg := self.link.channel.recv()).kind != MessageKind.DONE:
            if msg.kind == MessageKind.MAP:
                self.agree_mask(msg)
            else:
                self.round(msg)
        self.link.close()

    def agree_mask(self, msg: Message) -> None:
        """FedML-HE's mask agreement: upload the local score map, open the summed map, take the top p."""
        before, epoch = self._traffic(), int(msg.meta.get("epoch", 0))
        with self.meter.phase("map"):
            local = self.local.score_map()
        self.link.upload({"round": -1, "epoch": epoch, "samples": 1}, [local], None, self.meter)
        expect = self.link.reply_kinds[MessageKind.MAP]
        reply = self.link.channel.recv()
        if not self.link.starts_aggregate(reply.kind, expect):
            raise PartyError(
                f"expected '{expect}' from {self.link.channel.peer}, got '{reply.kind}'", "protocol mismatch"
            )
        opened = self.link.open(reply, epoch, self.meter)
        self.mask = self.local.agree(opened.encrypted)
        self.link.channel.send(Message(MessageKind.ACK, {"round": -1}))
        sent, received = self._traffic()
        self.records.put(
            MaskAgreementRecord(
                config=self.ctx.config.label,
                role="client",
                client=self.index,
                engine=opened.engine,
                encrypted_fraction=float(self.mask.mean()),
                mask_sha256=self.local.mask_digest(self.mask),
                bytes_sent=sent - before[0],
                bytes_received=received - before[1],
                **self.meter.measured(),
            )
        )

    def round(self, msg: Message) -> None:
        """One round: train and upload when told to ("train"; else this round's aggregate is arriving), then open
        the aggregate into the model.

        With faults (:mod:`hebench.faults`) a selected client may leave at its drawn phase: ``before_train``
        (it does no work), ``after_train`` (it trained but sends nothing), ``after_upload`` (its update is in
        the aggregate; it does not acknowledge it). A straggler computes ``slowdown`` times as long; one whose
        upload cannot be in within ``training.round_deadline_s`` of the instruction (compute, plus the upload's
        time on its shaped link) is late and sends nothing. A
        client that left still loads the aggregate: it rejoins the next round with the global model.
        """
        r, epoch = int(msg.meta["round"]), int(msg.meta["epoch"])
        before = self._traffic()
        report: dict[str, Any] = {"epoch": epoch}
        expect = self.link.reply_kinds[MessageKind.TRAIN]
        fit = self.range.fit(self.local.model) if self.range is not None else None  # from the round's global model
        fault, left = self.fault(r), None
        self.link.leaving = fault.dropout_phase if msg.kind == MessageKind.TRAIN else None
        held = model_vector(self.local.model) if self.may_skip else None  # kept if the round is skipped
        if msg.kind == MessageKind.TRAIN:
            left = self._train_and_upload(msg, r, epoch, fault, fit, report)
            with self.meter.phase("wait"):
                msg = self.link.channel.recv()
        if not self.link.starts_aggregate(msg.kind, expect):
            raise PartyError(
                f"expected 'train' or '{expect}' from {self.link.channel.peer}, got '{msg.kind}'", "protocol mismatch"
            )
        opened = self.link.open(msg, epoch, self.meter)
        if opened.engine is not None:
            report["engine"] = opened.engine
        if opened.skipped:  # too few arrived: the global model stays as it was
            assert held is not None, "a round of a mode that cannot skip one was skipped"
            vector, report["skipped"] = held, True
        else:
            vector = join(opened.encrypted, opened.plain, self.mask)
            if opened.weight_total != 1.0:  # FedAvg over the survivors: the sum carries their weights only
                vector = renormalised(vector, opened.weight_total)
            if fit is not None:
                fit.restore(vector)
                report["range_scale_max"] = fit.largest
        ack = {"left": "after_upload"} if left == "after_upload" else {}
        if opened.failed is not None:  # the aggregator learns why this client found no aggregate (secret sharing)
            ack["failed"] = opened.failed
        self.local.finish_round(
            self.link.channel, r, vector, opened.weights, self.meter, before, report, self._traffic, ack
        )

    def _train_and_upload(
        self, msg: Message, r: int, epoch: int, fault: Fault, fit: RangeFit | None, report: dict[str, Any]
    ) -> str | None:
        """Train and upload, or leave where this round's fault says; returns the phase left at (None: stayed)."""
        if fault.slowdown != 1.0:
            report["slowdown"] = fault.slowdown
        if fault.dropout_phase == "before_train":
            return self._leave(r, "before_train", report)
        told = time.perf_counter()
        with self.meter.phase("train"):
            vector, report["train_loss"] = self.local.train(r, hold_charge=True)
            if fault.slowdown > 1.0:  # a slower device: the same work takes longer in wall time
                time.sleep((fault.slowdown - 1.0) * (time.perf_counter() - told))
        if fault.dropout_phase == "after_train":
            return self._leave(r, "after_train", report)
        if self.deadline_s is not None and self._late(told, vector, report):
            return self._leave(r, "late", report)
        self.local.release_charge()  # DP: charged before the update leaves (withdrawn where the client left)
        meta = {"round": r, "epoch": epoch, "samples": self.local.samples}
        if msg.meta.get("pre"):
            meta["pre"] = msg.meta["pre"]
        sent = self._traffic()[0]
        self._upload(meta, vector, fit, report)
        self.upload_bytes = self._traffic()[0] - sent
        del vector
        if fault.dropout_phase == "after_upload":
            report["dropout_phase"] = "after_upload"
            return "after_upload"
        return None

    def _late(self, told: float, vector: np.ndarray, report: dict[str, Any]) -> bool:
        """Whether this client cannot have its upload in within ``round_deadline_s`` of the instruction: the
        time since (compute) plus, on a shaped link, the upload's time on it (:mod:`hebench.faults.link_time`),
        for the bytes its last upload took (before its first, the update's plaintext bytes)."""
        assert self.deadline_s is not None
        link = shaping.current_link()
        on_link = 0.0
        if link is not None:
            on_link = upload_link_s(link, self.upload_bytes if self.upload_bytes is not None else vector.nbytes)
            report["upload_link_s"] = on_link
        return time.perf_counter() - told + on_link > self.deadline_s

    def _leave(self, r: int, phase: str, report: dict[str, Any]) -> str:
        """Leave the round at ``phase``: nothing trained was sent, so DP charges none of it (the model is then
        replaced by the global one, so nothing trained here reaches a later update)."""
        self.local.withdraw_charge()
        report["dropout_phase"] = phase
        self.link.leave(r, phase)
        return phase

    def _upload(self, meta: dict[str, Any], vector: np.ndarray, fit: RangeFit | None, report: dict[str, Any]) -> None:
        """Split the update by the selective mask, fit it into the adapter's range, hand it to the link."""
        trained = vector
        own = not self.ctx.suite.measure.decryption_error  # else the runner's oracle reads it (queued, not copied)
        if fit is not None:  # in place when the vector is this client's own: no second model-sized array
            vector = fit.scaled(vector, in_place=own)
        encrypted, plain = split(vector, self.mask)
        if fit is not None:
            encrypted, report["clipped_values"] = fit.saturate(encrypted, in_place=own or encrypted is not trained)
        pieces = split_layers(encrypted, self.sizes) if len(encrypted) else []
        self.link.upload(meta, pieces, plain if self.mask is not None else None, self.meter)


def renormalised(vector: np.ndarray, weight_total: float, block: int = 1 << 18) -> np.ndarray:
    """``vector / weight_total``, each value divided in float64 and rounded to float32 once, in place (a copy only
    of a read-only vector), a block at a time: no model-sized float64 copy."""
    vector = vector if vector.flags.writeable else vector.copy()
    for start in range(0, len(vector), block):
        part = vector[start : start + block]
        part[:] = part.astype(np.float64) / weight_total
    return vector


def run_client(ctx: PartyContext, control: Connection, records: Any) -> None:
    """Process entry for a client of any mode: the mode's spec names the link."""
    serve_client(ctx, control.recv(), records)


def serve_client(ctx: PartyContext, wiring: Wiring, records: Any) -> None:
    """One client from set-up to the end of the run, in the calling thread (its own process, or a pool's thread)."""
    setup = PhaseMeter(ctx.worker)
    local = LocalModel(ctx, records)
    link = resolve(ctx.config.spec.local_link)(ctx, wiring, local.samples, setup)
    client = Client(ctx, local, link, PhaseMeter(ctx.worker), records)
    records.put(PartySetupRecord(config=ctx.config.label, role="client", client=ctx.client_index, **setup.measured()))
    client.serve()
