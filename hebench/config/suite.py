"""A whole suite: its blocks, and the checks that span them (clients per round, threats, faults, labels)."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from hebench.config.base import FieldProblem, Frozen, Seed, configuration_name
from hebench.config.configurations import Configuration, OffloadSpec
from hebench.config.data import DataSpec
from hebench.config.faults import FaultsSpec
from hebench.config.model import DECODER_POSITIONS, ModelSpec
from hebench.config.network import NetworkSpec
from hebench.config.privacy import PrivacySpec
from hebench.config.problems import describe
from hebench.config.runtime import MeasureSpec, RuntimeSpec
from hebench.config.text_leakage import TextLeakageSpec, text_leakage_shorthand
from hebench.config.training import TrainingSpec
from hebench.errors import SuiteError
from hebench.protections import mode_names
from hebench.protections.threats import NotDefined


class Suite(Frozen):
    name: str
    description: str = ""
    seed: Seed = 0  # every generator of the run derives from it
    data: DataSpec = DataSpec()
    model: ModelSpec = ModelSpec()
    training: TrainingSpec = TrainingSpec()
    configurations: tuple[Configuration, ...] = Field(min_length=1)
    offload: OffloadSpec = OffloadSpec()
    privacy: PrivacySpec | None = None
    # a language-model suite's text attacks after its runs (None: the defaults, on; refused on other suites)
    text_leakage: Annotated[TextLeakageSpec | None, BeforeValidator(text_leakage_shorthand)] = None
    measure: MeasureSpec = MeasureSpec()
    runtime: RuntimeSpec = RuntimeSpec()
    network: NetworkSpec | None = None  # every party's links (None: loopback, unshaped); a configuration may override
    faults: FaultsSpec | None = None  # clients that drop out or lag (None: none); a configuration may override

    def faults_for(self, config: Configuration) -> FaultsSpec | None:
        """The faults ``config`` runs with, every key set (the suite's with ``config.faults``' keys over them);
        None: no client drops or lags."""
        if config.faults is None and self.faults is None:
            return None
        spec = config.faults.over(self.faults) if config.faults is not None else self.faults
        assert spec is not None
        resolved = spec.resolved(self.seed)
        return resolved if resolved.active else None

    def network_for(self, config: Configuration) -> NetworkSpec | None:
        """The links ``config`` runs on, every key set: the suite's ``network`` with the keys ``config.network``
        gives over it (``clients``, ``server``, ``tiers``, ``emulation``), so ``--set network.emulation=model``
        reaches every configuration that did not set its own; None: loopback."""
        if config.network is None and self.network is None:
            return None
        spec = config.network.over(self.network) if config.network is not None else self.network
        assert spec is not None
        return spec.resolved()

    @property
    def text_attacks(self) -> TextLeakageSpec | None:
        """How ``hebench run`` attacks this suite's views for text after its runs (None: it does not: not a
        language-model suite, or ``text_leakage`` turned off)."""
        if not self.data.is_text:
            return None
        spec = self.text_leakage or TextLeakageSpec()
        return spec if spec.enabled else None

    def model_for(self, config: Configuration) -> ModelSpec:
        """The model ``config`` trains: the suite's, fine-tuned as ``config.fine_tuning`` says where it does."""
        return self.model.with_fine_tuning(config.fine_tuning)

    def faults_tolerated(self, config: Configuration) -> bool:
        """``config``'s aggregator finishes rounds with the clients that arrived, so a client process that dies is
        a dropout of that round (the other modes' runs still end with it)."""
        return config.spec.survives_client_loss

    def rounds_may_skip(self, config: Configuration) -> bool:
        """A round of ``config`` may end without an aggregate (too few arrived, or a client lost mid-upload), so
        clients keep the round's global model until it comes: faults, a deadline, or a mode that survives a
        client process that dies (even with no ``faults:`` block)."""
        return (
            self.faults_for(config) is not None
            or self.training.round_deadline_s is not None
            or self.faults_tolerated(config)
        )

    @model_validator(mode="after")
    def _consistent(self) -> Suite:
        self._check_text()
        per_round = self.training.clients_per_round
        if self.data.clients == "all":  # checked against the writers found, when the data is loaded
            return self._checked()
        if per_round is not None and per_round > self.data.clients:
            raise FieldProblem(
                "training.clients_per_round",
                f"training.clients_per_round={per_round} exceeds data.clients={self.data.clients}: "
                "lower it, or raise data.clients",
            )
        remote = self.offload.engines
        if remote and len(remote) != self.data.clients:
            raise FieldProblem(
                "offload.engines", f"offload.engines lists {len(remote)} engines for {self.data.clients} clients"
            )
        if remote and any(c.transport == "tls" and c.spec.needs_engines for c in self.configurations):
            raise FieldProblem(
                "offload.engines",
                "transport: tls makes this run's party certificates for local engines only: "
                "leave offload.engines empty, or use transport: tcp with remote engines",
            )
        if remote and not self.offload.tls_dir:
            raise FieldProblem(
                "offload.tls_dir",
                "remote offload engines need mutual TLS: set offload.tls_dir (hebench engine certs DIR)",
            )
        return self._checked()

    def _checked(self) -> Suite:
        warmup, rounds = self.measure.warmup_rounds, self.training.rounds
        if warmup is not None and warmup >= rounds:
            raise FieldProblem(
                "measure.warmup_rounds",
                f"measure.warmup_rounds={warmup} leaves no steady round of training.rounds={rounds}; "
                "lower it or add rounds",
            )
        if self.data.clients != "all":  # a mode's own limits on the clients of one round (secagg's modulus)
            per_round = self.training.clients_per_round or self.data.clients
            for i, config in enumerate(self.configurations):
                if config.mode_params is not None:
                    try:
                        config.mode_params.check_clients(per_round)
                    except ValueError as err:
                        raise FieldProblem(f"configurations.{i}.params", str(err)) from None
        self._check_threats()
        self._check_faults()
        labels = [c.label for c in self.configurations]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            second = next(i for i, x in enumerate(labels) if x in dupes and labels.index(x) < i)
            raise FieldProblem(
                f"configurations.{second}.name",
                f"two or more configurations have the label {', '.join(repr(d) for d in dupes)} (same mode, adapter, "
                "params, packing and selective settings); give each a distinct name (its name: key)",
            )
        return self

    def _check_text(self) -> None:
        """Text goes with a decoder and a decoder with text; a pretrained base with its own vocabulary; blocks no
        longer than the decoder's positions; what language runs do not support yet, refused."""
        data, model = self.data, self.model
        if data.is_text != model.is_decoder:
            decoders = ", ".join(DECODER_POSITIONS)
            if data.is_text:
                raise FieldProblem(
                    "model.name",
                    f"data {data.dataset} is text, which the {model.name} classifier cannot read: "
                    f"use a GPT-2 decoder ({decoders})",
                )
            raise FieldProblem(
                "data.dataset",
                f"model {model.name} is a language model (next-token prediction on text); {data.dataset} is not "
                "text: use dataset: shakespeare",
            )
        for i, config in enumerate(self.configurations):
            if config.fine_tuning is not None and not model.is_decoder:
                raise FieldProblem(
                    f"configurations.{i}.fine_tuning",
                    f"fine_tuning chooses LoRA or full fine-tuning of a GPT-2 decoder; {model.name} is trained in "
                    "full: remove it, or use model gpt2_tiny / gpt2_small",
                )
            if model.is_decoder and config.dp is not None and config.dp.level == "sample":
                raise FieldProblem(
                    f"configurations.{i}.dp.level",
                    "sample-level DP (DP-SGD through Opacus) is not wired for the GPT-2 decoders yet: "
                    "use dp: {level: client, ...} (clipped, noised updates)",
                )
        if not model.is_decoder:
            return
        if model.pretrained and data.vocabulary.source != "pretrained":
            raise FieldProblem(
                "data.tokenizer.source",
                "the pretrained base reads its own vocabulary (the embeddings are trained for it): remove "
                "data.tokenizer, or set model.pretrained: false",
            )
        positions = DECODER_POSITIONS[model.name]
        if data.block_tokens > positions:
            raise FieldProblem(
                "data.block_tokens",
                f"data.block_tokens={data.block_tokens} exceeds the {positions} positions {model.name} reads: "
                f"lower it to at most {positions}",
            )

    def _check_faults(self) -> None:
        """``min_clients`` fits the round, and every configuration with faults can finish rounds with survivors."""
        least = self.training.min_clients
        if least is not None and self.data.clients != "all":
            per_round = self.training.selected_count(self.data.clients)
            if least > per_round:
                raise FieldProblem(
                    "training.min_clients",
                    f"training.min_clients={least} is above the {per_round} clients a round selects: "
                    "lower min_clients, or raise clients_per_round or overselect",
                )
        for i, config in enumerate(self.configurations):
            if self.faults_for(config) is not None and not config.spec.survives_dropout:
                survivors = ", ".join(mode_names(lambda spec: spec.survives_dropout))
                raise FieldProblem(
                    f"configurations.{i}.mode",
                    f"{configuration_name(i, config.label)}: mode {config.mode} does not yet finish rounds with "
                    f"the survivors in the running system; with faults use {survivors}, or set "
                    f"configurations.{i}.faults: {{dropout: 0, stragglers: {{share: 0}}}}",
                )

    def _check_threats(self) -> None:
        """Each threat model fits every configuration whose mode defines it, and at least one defines it."""
        if self.privacy is not None and self.data.is_text:
            raise FieldProblem(
                "privacy",
                "the privacy section's attacks reconstruct images; a language-model suite's text is attacked by "
                "its text_leakage section (on by default): remove the privacy section",
            )
        if self.text_leakage is not None and not self.data.is_text:
            raise FieldProblem(
                "text_leakage",
                f"text_leakage attacks a language model's text, and data {self.data.dataset} is not text: remove "
                "text_leakage (image attacks go in a privacy section)",
            )
        if self.privacy is not None and self.data.dataset == "tokens":
            raise FieldProblem(
                "privacy",
                "the attacks reconstruct images, and data tokens holds generated token ids (cost only); "
                "attack an image dataset (natural, digits, femnist, ...) or remove the privacy section",
            )
        if self.privacy is None or not self.privacy.against_configurations or self.data.clients == "all":
            return
        per_round = self.training.clients_per_round or self.data.clients
        attacked = [(i, c) for i, c in enumerate(self.configurations) if c.tee is None]
        for t, threat in enumerate(self.privacy.threats):
            undefined = []
            for i, config in attacked:
                try:
                    threat.outcome(config, per_round)
                except NotDefined as err:
                    undefined.append(f"{configuration_name(i, config.label)}: {err}")
                except ValueError as err:
                    # the threat's own keys are at fault (k, clients): name the one the problem is about
                    raise FieldProblem(
                        f"privacy.threats.{t}.{threat.field_at_fault()}",
                        f"against {configuration_name(i, config.label)}: {err}",
                    ) from None
            if attacked and len(undefined) == len(attacked):
                raise FieldProblem(f"privacy.threats.{t}.adversary", f"no configuration defines it; {undefined[0]}")

    def with_clients(self, count: int) -> Suite:
        """This suite with ``data.clients: all`` resolved to the ``count`` clients the data holds (validated)."""
        if self.data.clients != "all":
            return self
        raw = self.model_dump(mode="json")
        raw["data"]["clients"] = count
        try:
            return Suite.model_validate(raw)
        except ValidationError as err:
            problem, _ = describe(err, Suite)
            raise SuiteError(f"with data.clients: all ({count} writers): {problem}", "lower that field") from None

    def digest(self) -> str:
        """sha256 of the validated suite (overrides included), for provenance."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()
