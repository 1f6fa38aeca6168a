"""A client's model-side work, shared by host-he clients and offload hosts.

Training, applying a decrypted aggregate, evaluation, checkpoints, and the
out-of-band oracle records the runner uses to check decryption error.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from hebench.fl.aggregator import selected_clients
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.training import GLOBAL_RNG, batch_count, evaluate, make_optimizer, train_locally
from hebench.fl.update import load_vector, model_vector, state_vector
from hebench.models import build_model
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.protections.dp.ledger import Charge, PrivacyLedger
from hebench.protections.dp.mechanism import SampleLevelDP, privatize_update
from hebench.protections.dp.noise import CLIENT_STREAM, SAMPLE_STREAM, NoiseSource, SecretNoise, SeededNoise
from hebench.protections.selective.agreement import client_map, mask_from
from hebench.results.records import PartyRoundRecord
from hebench.results.run_folder import RunFolder


class LocalModel:
    def __init__(self, ctx: PartyContext, records: Any) -> None:
        assert ctx.data is not None
        self.ctx, self.records, self.data = ctx, records, ctx.data
        with GLOBAL_RNG:
            torch.manual_seed(ctx.suite.seed)  # same initial model everywhere
            self.model = build_model(ctx.suite.model.name, ctx.input_shape, ctx.num_classes, ctx.suite.model.hidden)
            if ctx.initial is not None:
                load_vector(self.model, ctx.initial)
            self._warm_up()
        self.folder = RunFolder(ctx.run_dir)
        self.checkpoints = self.folder.checkpoints(ctx.config.label)
        dp = ctx.config.dp
        self.sample_dp = None
        self._held: tuple[Charge, tuple[int, Any]] | None = None  # a trained round's charge, not yet released
        if dp is not None and dp.level == "sample":
            self.sample_dp = SampleLevelDP(dp, len(self.data), ctx.suite.training.batch_size)
            self.sample_dp.check(self.model)
            self.ledger = PrivacyLedger(self.folder.dp_ledger(ctx.config.label, ctx.client_index))
            self._restore_accountant()

    def _restore_accountant(self) -> None:
        """Charge the steps this client took before it was (re)started: its ledger's, or for a run written
        before ledgers existed, its rounds before ``start_round`` (written to a new ledger)."""
        assert self.sample_dp is not None
        charges = self.ledger.charges()
        if not charges and self.ctx.start_round > 0:
            suite, dp = self.ctx.suite, self.sample_dp
            steps = batch_count(len(self.data), suite.training)
            for r in range(self.ctx.start_round):
                chosen = selected_clients(
                    suite.seed, r, int(suite.data.clients), suite.training.selected_count(int(suite.data.clients))
                )
                if self.ctx.client_index in chosen:
                    charges.append(Charge(r, steps, dp.sample_rate, dp.spec.noise_multiplier))
                    self.ledger.append(charges[-1])
        for charge in charges:
            self.sample_dp.account(charge.steps, charge.sample_rate, charge.noise_multiplier)

    def _warm_up(self) -> None:
        """A forward and backward pass and an optimiser step at set-up, so round 0 is not charged PyTorch's
        first-call costs (autograd and the optimiser's lazy imports cost about a second of CPU here). The model is
        unchanged: the pass runs in eval mode (no statistics move), the step updates a throwaway tensor, and the
        gradients are dropped; no copy of the model is made (a 110 M-parameter model is 440 MB)."""
        was_training = self.model.training
        self.model.eval()
        torch.nn.functional.cross_entropy(self.model(self.data.x[:8]), self.data.y[:8]).backward()
        self.model.zero_grad(set_to_none=True)
        self.model.train(was_training)
        dummy = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2))])  # no draw from torch's generator
        dummy[0].sum().backward()
        make_optimizer(dummy, self.ctx.suite.training).step()

    def initial_mask(self) -> np.ndarray | None:
        """The selective mask known before any agreement (layer masks), else None."""
        spec = self.ctx.config.selective
        if spec is None or spec.needs_agreement:
            return None
        return self._saved(mask_from(spec, self.model, None))

    def score_map(self) -> np.ndarray:
        spec = self.ctx.config.selective
        assert spec is not None
        return client_map(spec, self.model, self.data.x, self.data.y, self.ctx.suite.seed)

    def agree(self, summed: np.ndarray) -> np.ndarray:
        spec = self.ctx.config.selective
        assert spec is not None
        return self._saved(mask_from(spec, self.model, summed))

    @staticmethod
    def mask_digest(mask: np.ndarray) -> str:
        return hashlib.sha256(np.packbits(mask).tobytes()).hexdigest()

    def _saved(self, mask: np.ndarray) -> np.ndarray:
        """The evaluating client keeps the agreed mask with the run (attacks and reports read it)."""
        if self.ctx.client_index == 0:
            np.save(self.folder.ensure(self.folder.mask(self.ctx.config.label)), mask)
        return mask

    @property
    def stateless(self) -> bool:
        """True when the model has no buffers: its update is its whole state."""
        return next(iter(self.model.buffers()), None) is None

    @property
    def samples(self) -> int:
        return len(self.data)

    def train(self, round_index: int, *, hold_charge: bool = False) -> tuple[np.ndarray, float]:
        """Local training for one round; returns the update vector (what the client uploads) and the mean loss.

        Sample-level DP charges the round's noisy steps to the ledger before the update can leave; with
        ``hold_charge`` the charge waits for :meth:`release_charge` (the update is about to be sent) or
        :meth:`withdraw_charge` (it never will be: the client left after training or was late).

        With client-level DP the uploaded model is the global model plus the clipped, noised update. With
        sample-level DP the batches are drawn from a secret seed too: the accountant's sampling rate amplifies
        privacy only while the aggregator cannot tell which examples each step used.
        """
        dp, sample = self.ctx.config.dp, self.sample_dp
        seed = self.ctx.suite.seed * 1_000_003 + round_index * 1009 + self.ctx.client_index
        if sample is not None:
            sample.noise = self._noise(round_index, SAMPLE_STREAM)
            seed = seed if sample.spec.reproducible_noise else secrets.randbits(64)
        client_dp = dp is not None and dp.level == "client"
        start = model_vector(self.model) if client_dp else None  # a model-sized copy: only DP needs it
        before = sample.snapshot() if sample is not None else None
        loss = train_locally(self.model, self.data.x, self.data.y, self.ctx.suite.training, seed, sample)
        self.model.zero_grad(set_to_none=True)  # a model-sized buffer the rest of the round does not need
        vector = model_vector(self.model)
        if sample is not None:  # charged before the update leaves this client
            assert before is not None
            z = sample.spec.noise_multiplier
            self._held = Charge(round_index, sample.steps - before[0], sample.sample_rate, z), before
            if not hold_charge:
                self.release_charge()
        if client_dp:
            assert dp is not None and start is not None
            vector = start + privatize_update(vector - start, dp, self._noise(round_index, CLIENT_STREAM))
        if self.ctx.suite.measure.decryption_error:
            self.records.put(
                {
                    "kind": MessageKind.ORACLE_UPDATE,
                    "client": self.ctx.client_index,
                    "round": round_index,
                    "vector": vector,
                }
            )
        return vector, loss

    def release_charge(self) -> None:
        """The trained update is about to leave: its held charge goes to the ledger (synced first)."""
        if self._held is not None:
            self.ledger.append(self._held[0])
            self._held = None

    def withdraw_charge(self) -> None:
        """The trained update never leaves this client: its steps are not charged (the accountant is as before
        training). Sound only because the client then loads the global model (:meth:`apply`, or the model it
        held when the round is skipped): nothing trained in that round reaches a later update."""
        if self._held is not None:
            assert self.sample_dp is not None
            self.sample_dp.restore(self._held[1])
            self._held = None

    def _noise(self, round_index: int, stream: int) -> NoiseSource:
        """This round's DP noise: secret to this client, or derived from public values if the suite asks."""
        dp = self.ctx.config.dp
        if dp is not None and dp.reproducible_noise:
            return SeededNoise.public(self.ctx.suite.seed, round_index, self.ctx.client_index, stream)
        return SecretNoise()

    def privacy_spent(self) -> dict[str, Any]:
        """Sample-level DP: this client's ε so far and how it was accounted (for its round record)."""
        return {} if self.sample_dp is None else self.sample_dp.report()

    def finish_round(
        self,
        channel: Channel,
        r: int,
        vector: np.ndarray,
        weights: dict[str, float],
        meter: PhaseMeter,
        before: tuple[int, int],
        report: dict[str, Any],
        traffic: Callable[[], tuple[int, int]] | None = None,
        ack: dict[str, Any] | None = None,
    ) -> None:
        """Load the global model, acknowledge (``ack``: extra fields of the acknowledgement), and record this
        party's round (bytes since ``before``, on ``channel`` or, where given, on every channel ``traffic()``
        counts)."""
        with meter.phase("evaluate"):
            report.update(self.apply(r, vector, weights))
        channel.send(Message(MessageKind.ACK, {"round": r, **(ack or {})}))
        sent, received = traffic() if traffic is not None else (channel.bytes_sent, channel.bytes_received)
        self.records.put(
            PartyRoundRecord(
                config=self.ctx.config.label,
                role="client",
                client=self.ctx.client_index,
                round=r,
                affinity=tuple(sorted(os.sched_getaffinity(0))),
                bytes_sent=sent - before[0],
                bytes_received=received - before[1],
                **self.privacy_spent(),
                **report,
                **meter.measured(),
            )
        )

    def apply(self, round_index: int, vector: np.ndarray, weights: dict[str, float]) -> dict[str, float]:
        """Load the decrypted global model; the evaluating client also checkpoints and reports."""
        vector = np.asarray(vector, dtype=np.float32)
        load_vector(self.model, vector)
        if self.ctx.client_index != 0:
            return {}
        assert self.ctx.test is not None
        ev = evaluate(self.model, *self.ctx.test)
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        np.save(self.checkpoints / f"round-{round_index}.npy", vector if self.stateless else state_vector(self.model))
        if self.ctx.suite.measure.decryption_error:
            self.records.put(
                {"kind": MessageKind.ORACLE_AGGREGATE, "round": round_index, "vector": vector, "weights": weights}
            )
        return {"accuracy": ev.accuracy, "loss": ev.loss}
