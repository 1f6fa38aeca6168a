"""Run a suite: each configuration's parties started by a runtime, their records written as JSON lines.

The runner is the measurement harness, not a party. It owns the suite loop,
supervision and record collection for every runtime (local processes, Flower):
it writes what the parties report, and checks the decrypted aggregate against
plaintext FedAvg (the clients hand it their plaintext updates out of band,
over a queue the aggregator never sees). Every completed round is on disk
before the next starts; ``resume`` continues from the last one.
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hebench.analysis.tee_model import load_coefficients, modelled_costs
from hebench.config import Configuration, Suite
from hebench.data.federated import FederatedData
from hebench.data.registry import load_federated
from hebench.errors import HebenchError, ParameterError, PartyError
from hebench.measure.environment import capture
from hebench.models.size import check_fits
from hebench.models.task import ModelInputs
from hebench.models.tasks import task_for
from hebench.net.messages import MessageKind
from hebench.protections.dp.noise import reproducible_noise_note
from hebench.protections.sharing.params import SecretSharingParams
from hebench.results import ResultWriter, read_records
from hebench.results.records import (
    QUALITY_FIELDS,
    AttackSummaryRecord,
    PartyLostRecord,
    PartyRoundRecord,
    PartySetupRecord,
    Record,
    RoundRecord,
    RunFailedRecord,
    TextAttackSummaryRecord,
)
from hebench.results.run_folder import RunFolder
from hebench.runtime.base import ConfigurationRun, Runtime, Started
from hebench.runtime.local.network import check_networks, network_plan, network_record
from hebench.runtime.local.processes import LocalRuntime


@dataclass(frozen=True)
class RunEvent:
    """Progress callback payload."""

    config: str
    round: int | None  # None: configuration starting (or skipped, with ``skipped``)
    record: dict[str, Any] | None = None
    skipped: bool = False


def completed_rounds(run_dir: Path) -> dict[str, int]:
    """Configuration label → number of rounds already completed on disk."""
    path = RunFolder(run_dir).results
    if not path.exists():
        return {}
    done: dict[str, set[int]] = {}
    for rec in read_records(path, kind=RoundRecord).of(RoundRecord):
        done.setdefault(rec.config, set()).add(rec.round)
    out = {}
    for label, rounds in done.items():
        n = 0
        while n in rounds:
            n += 1
        out[label] = n
    return out


class Runner:
    def __init__(
        self,
        suite: Suite,
        run_dir: Path,
        on_event: Callable[[RunEvent], None] | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self.suite = suite
        self.run_dir = run_dir
        self.folder = RunFolder(run_dir)
        self.on_event = on_event or (lambda event: None)
        self.runtime: Runtime = runtime or LocalRuntime()
        self._at: tuple[str | None, int | None] = (None, None)  # configuration and round under way

    def run(self, resume: bool = False) -> Path:
        tls = [c.label for c in self.suite.configurations if c.transport == "tls"]
        if tls and not isinstance(self.runtime, LocalRuntime):  # never a silent run without the asked-for TLS
            raise ParameterError(
                f"transport: tls ({', '.join(tls)}) is made by the local runtime, not by --engine {self.runtime.name}",
                "run these configurations without --engine, or use the engine's own TLS settings",
            )
        if resume and not self.runtime.supports_resume:
            raise PartyError(
                f"--resume is not supported with --engine {self.runtime.name}",
                "rerun the suite into a new --out folder",
            )
        check_networks(self.suite, self.runtime.name)  # links this machine cannot apply fail before any work
        note = lambda text: self.on_event(RunEvent(text, None))  # noqa: E731
        data = load_federated(self.suite.data, self.suite.seed)
        self.suite = self.suite.with_clients(len(data.clients))  # data.clients: all -> every writer found
        with self.runtime.session(self.suite, self.run_dir, note):
            return self._run(resume, data)

    def _run(self, resume: bool, data: FederatedData) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        results = self.folder.results
        if results.exists() and not resume:
            raise PartyError(
                f"{results} already holds results",
                "pass --resume to continue that run, or --out to a new folder",
            )
        done = completed_rounds(self.run_dir) if resume else {}
        self.folder.suite.write_text(yaml.safe_dump(self.suite.model_dump(mode="json"), sort_keys=False))
        data = load_federated(self.suite.data, self.suite.seed)
        if data.tokenizer is not None:  # text: attacks and reports decode with the clients' vocabulary
            from hebench.models.language.run_files import write_run_files

            write_run_files(self.folder, self.suite, data.tokenizer)
        with ResultWriter(results) as writer:
            writer.write(
                "run",
                {
                    "suite": self.suite.model_dump(mode="json"),
                    "suite_hash": self.suite.digest(),
                    "environment": capture(),
                    "data": data.summary(),
                    "resumed": resume,
                },
            )
            try:
                for config in self.suite.configurations:
                    start = done.get(config.label, 0)
                    if start >= self.suite.training.rounds:
                        self.on_event(RunEvent(config.label, None, skipped=True))
                        continue
                    self._run_config(config, data, start, writer)
                self._at = (None, None)
                self._run_attacks(writer, resume)
                self._run_text_attacks(writer, resume)
            except (Exception, KeyboardInterrupt) as err:
                self._record_failure(writer, err)
                raise
        return results

    def _record_failure(self, writer: ResultWriter, err: BaseException) -> None:
        """A ``run_failed`` record naming the error and where it struck; a failure to write it hides nothing."""
        config, round_index = self._at
        if isinstance(err, HebenchError):
            problem, fix = err.problem, err.fix
        elif isinstance(err, KeyboardInterrupt):
            problem, fix = f"interrupted ({getattr(err, 'signal_name', 'Ctrl-C')})", ""
        else:
            problem, fix = str(err) or type(err).__name__, ""
        record = RunFailedRecord(
            error=type(err).__name__,
            problem=problem,
            fix=fix or "completed rounds are kept: fix the cause and rerun with --resume",
            config=config,
            round=round_index,
        )
        with contextlib.suppress(HebenchError, OSError):  # the original error is the one to raise
            writer.write(record)

    def _run_attacks(self, writer: ResultWriter, resume: bool) -> None:
        """The suite's privacy section, after the runs: what each configuration's aggregator could reconstruct."""
        from hebench.inversion.campaign import plans_for, run_campaign

        plans = plans_for(self.suite)
        if resume:
            summaries = read_records(self.folder.results, kind=AttackSummaryRecord).of(AttackSummaryRecord)
            finished = {r.plan for r in summaries}
            plans = [p for p in plans if p.name not in finished]
        if plans:  # one campaign: its restart workers are shared, and attacks that coincide run once
            self.on_event(RunEvent(f"attacks: {len(plans)} plan{'' if len(plans) == 1 else 's'}", None))
            run_campaign(plans, writer, self.folder.attacks)

    def _run_text_attacks(self, writer: ResultWriter, resume: bool) -> None:
        """A language-model suite's text leakage, after the runs (its ``text_leakage`` block, on by default): each
        configuration's views attacked as ``hebench attack RUN`` attacks them, recorded in the run's results."""
        from hebench.inversion.text.campaign import views_of
        from hebench.inversion.text.recorded import record_text_attacks
        from hebench.inversion.text.sources import run_source

        spec = self.suite.text_attacks
        if spec is None:
            return
        done: set[tuple[str, str, int]] = set()
        if resume:  # a view summarised before the interruption is not attacked again; the rest of its config is
            summaries = read_records(self.folder.results).of(TextAttackSummaryRecord)
            done = {(r.config, r.view, r.batch_size) for r in summaries}
            views = [v for c in self.suite.configurations for v in views_of(c, spec.mask_sources)]
            if all((v.config, v.view, b) in done for v in views for b in spec.batch_sizes):
                return
        source = run_source(self.run_dir)
        sizes = ", ".join(map(str, spec.batch_sizes))
        self.on_event(RunEvent(f"text attacks ({spec.attack}, batch {sizes})", None))
        record_text_attacks(source, spec.batch_sizes, spec.batches, spec.attack, writer.write, done=done)

    def _initial(self, config: Configuration, start: int) -> np.ndarray | None:
        if start == 0:
            return None
        path = self.folder.checkpoint(config.label, start - 1)
        if not path.exists():
            raise PartyError(f"cannot resume '{config.label}': checkpoint {path} is missing", "rerun without --resume")
        return np.load(path)

    def _configuration_record(self, config: Configuration, data: FederatedData, start: int) -> dict[str, Any]:
        """What a configuration's records are about (written before its first round)."""
        suite = self.suite
        model = suite.model_for(config)
        counts = task_for(model).counts(model, ModelInputs(data.input_shape, data.num_classes, data.end_of_text))
        check_fits(model.name, model.hidden, counts.total)  # before any party starts: no out-of-memory in one
        per_round = suite.training.clients_per_round or suite.data.clients
        return {
            "config": config.label,
            "mode": config.mode,
            "adapter": config.adapter,
            "params": config.params,
            "packing": config.packing,
            "selective": config.selective.model_dump(mode="json") if config.selective else None,
            "dp": config.dp.model_dump(mode="json") if config.dp else None,
            "transport": config.transport,
            "tee": config.tee.model_dump(mode="json") if config.tee else None,
            "model": model.name,
            "parameters": counts.total,
            "update_parameters": counts.shared,  # what a client's update carries (LoRA: the adapters only)
            "fine_tuning": model.fine_tuning.model_dump(mode="json") if model.is_decoder else None,
            "model_origin": model.origin,
            "start_round": start,
            "mode_security": config.mode_params.security(per_round) if config.mode_params else None,
            "network": network_record(suite, config, len(data.clients), self.runtime.name),
        }

    def _run_config(self, config: Configuration, data: FederatedData, start: int, writer: ResultWriter) -> None:
        self._at = (config.label, None)
        if config.tee is not None:  # a bad coefficients file fails before the run, not after it
            self._modelled_tee(config, None)
        record = {**self._configuration_record(config, data, start), **self.runtime.configuration_fields()}
        writer.write("configuration", record)
        if config.dp is not None and config.dp.reproducible_noise:  # debugging noise the aggregator can remove
            writer.write(reproducible_noise_note(config.label))
        self.on_event(RunEvent(config.label, None))
        run = ConfigurationRun(self.suite, config, self.run_dir, data, start, self._initial(config, start))
        started = self.runtime.start(run, self._control_recv)
        try:
            self._collect(config, start, started, writer)
            started.finish(writer.write)
        except PartyError as err:
            holder = _lost_share_holder(config, started)
            if holder is None:
                raise
            self._skip_for_holder(config, holder, err, writer)
        finally:
            started.stop()
        self._link_outcomes(config, data, writer)
        if config.tee is not None:
            self._modelled_tee(config, writer)

    def _skip_for_holder(self, config: Configuration, holder: str, err: PartyError, writer: ResultWriter) -> None:
        """``secret-sharing`` with ``on_holder_loss: skip``: the round under way is recorded as skipped, naming the
        lost share holder, and this configuration ends there (every later round would need the holder's shares
        too); the suite goes on with its next configuration."""
        round_index = self._at[1]
        assert round_index is not None  # set once the configuration's rounds began
        reason = (
            f"share holder {holder} was lost ({err.problem}): its shares of this round cannot be summed, and it would "
            "fail every later round; the configuration ends here (on_holder_loss: skip)"
        )
        record = RoundRecord(
            config=config.label, round=round_index, skipped=True, skip_reason=reason, load_avg=_load_avg()
        )
        writer.write(record)
        self.on_event(RunEvent(config.label, round_index, record.to_json()))

    def _link_outcomes(self, config: Configuration, data: FederatedData, writer: ResultWriter) -> None:
        """After a configuration: its modelled round times (``emulation: model``) and its time-to-accuracy."""
        from hebench.links.outcomes import modelled_rounds, time_to_accuracy
        from hebench.results.records import TimeToAccuracyRecord

        plan = network_plan(self.suite, config, len(data.clients))
        target = self.suite.training.target_accuracy
        if plan is None and target is None:
            return
        records = read_records(self.folder.results).records
        modelled = plan is not None and plan.emulation == "model"
        if modelled:
            assert plan is not None
            for rec in modelled_rounds(records, config.label, plan):
                writer.write(rec)
            records = read_records(self.folder.results).records
        if target is not None and not any(
            isinstance(r, TimeToAccuracyRecord) and r.config == config.label for r in records
        ):
            reached = time_to_accuracy(records, config.label, target, plan.label if plan else None, modelled)
            if reached is not None:
                writer.write(reached)

    def _modelled_tee(self, config: Configuration, writer: ResultWriter | None) -> None:
        """The configuration's modelled TEE row, from the measured records just written (never mixed with them);
        without a writer, only check the coefficients file."""
        tee = config.tee
        assert tee is not None
        path = str(self.folder.resolve(tee.coefficients))
        coefficients = load_coefficients(path)
        records = read_records(self.folder.results).records if writer is not None else []
        record = modelled_costs(config.label, records, coefficients, tee.mechanisms, path)
        if writer is not None:
            writer.write(record)

    def _control_recv(self, control: Any, name: str, started: Started) -> Any:
        """A party's start-up answer (its address), while watching that every party is still alive."""
        deadline = time.monotonic() + self.suite.measure.timeout_s
        while time.monotonic() < deadline:
            if control.poll(0.2):
                try:
                    return control.recv()
                except EOFError:  # the party died before answering: report why
                    started.parties[name].join(timeout=10)
            self._check_alive(started)
        raise PartyError(f"{name} did not start within {self.suite.measure.timeout_s:.0f} s", "check the machine load")

    def _check_alive(self, started: Started, lost: set[str] | None = None) -> None:
        """Raise when a party died; with ``lost`` (a mode that finishes rounds with the survivors, set-up done), a
        dead client process (or its offload engine) is added to it instead: a dropout, not the end of the run."""
        for name, proc in started.parties.items():
            code = proc.exitcode
            if code in (None, 0) or (lost is not None and name in lost):
                continue
            if lost is not None and _may_be_lost(name):
                lost.add(name)
                continue
            problem, fix = f"{name} exited with code {code}", "see the message above"
            if started.describe_exit is not None:
                problem, fix = started.describe_exit(name, code)
            try:
                while True:
                    rec = started.records.get(timeout=1.0)
                    if isinstance(rec, dict) and rec.get("kind") == "party_error":
                        problem, fix = f"{rec['role']} failed: {rec['problem']}", rec.get("fix", "")
                        break
            except (queue.Empty, OSError, ValueError):
                pass
            raise PartyError(problem, fix or "completed rounds are kept; fix the cause and rerun with --resume")

    def _collect(self, config: Configuration, start: int, started: Started, writer: ResultWriter) -> None:
        suite, label, records = self.suite, config.label, started.records
        reporters = suite.data.clients + 1 + started.extra_aggregators  # party_round records per round
        pending: dict[int, dict[str, Any]] = {}
        round_index = start
        self._at = (label, round_index)
        awaiting_setup = set(started.expected_setup)
        setup_deadline = time.monotonic() + suite.measure.setup_timeout_s
        deadline = time.monotonic() + suite.measure.timeout_s
        tolerant = suite.faults_tolerated(config)
        lost: set[str] = set()  # client processes (and engines) that died: dropouts (hebench.faults)
        recorded_lost: set[tuple[str, str]] = set()  # party_lost records written: (party, problem)

        def record_lost(name: str, problem: str, fix: str) -> None:
            """Why a party the run goes on without was lost: its exit code when its exit is seen, its error when
            that arrives (one record each)."""
            if (name, problem) not in recorded_lost:
                recorded_lost.add((name, problem))
                writer.write(PartyLostRecord(config=label, role=name, round=round_index, problem=problem, fix=fix))

        def advance() -> None:
            """Write every round whose parties have all reported (a lost client never will)."""
            nonlocal round_index
            lost_clients = {n for n in lost if n.startswith("client-")}
            while round_index in pending:
                state = pending[round_index]
                oracle_ready = not suite.measure.decryption_error or state["aggregate"] is not None
                if state["parties"] + len(lost_clients - state["reported"]) < reporters or not oracle_ready:
                    return
                pending.pop(round_index)
                record = RoundRecord(
                    config=label,
                    round=round_index,
                    **state["metrics"],
                    **self._error(state),
                    load_avg=_load_avg(),
                    **state.get("faults", {}),
                )
                writer.write(record)
                self.on_event(RunEvent(label, round_index, record.to_json()))
                round_index += 1
                self._at = (label, round_index)

        while round_index < suite.training.rounds:
            try:
                rec = records.get(timeout=0.5)
            except queue.Empty:
                before = set(lost)
                self._check_alive(started, lost if tolerant and not awaiting_setup else None)
                for name in sorted(lost - before):
                    record_lost(name, f"{name} exited with code {started.parties[name].exitcode}", "")
                if lost != before:
                    advance()
                now = time.monotonic()
                if awaiting_setup and now > setup_deadline:
                    late = {n for n in awaiting_setup if n.startswith("client-")}
                    others = awaiting_setup - late
                    waiting = f" (the {', '.join(sorted(others))} waits for them)" if late and others else ""
                    raise PartyError(
                        f"'{label}': {_names(late or awaiting_setup)} did not finish set-up (connect, keys, data) "
                        f"within {suite.measure.setup_timeout_s:.0f} s{waiting}",
                        "check that party's log and the machine's load; raise measure.setup_timeout_s for slow hosts",
                    ) from None
                if now > deadline:
                    missing = _names(started.expected_setup - pending.get(round_index, {}).get("reported", set()))
                    raise PartyError(
                        f"round {round_index} of '{label}' made no progress in {suite.measure.timeout_s:.0f} s"
                        + (f"; no report from {missing}" if started.expected_setup else ""),
                        "check that party's error; raise measure.timeout_s for slow adapters",
                    ) from None
                continue
            deadline = time.monotonic() + suite.measure.timeout_s
            if not isinstance(rec, Record):  # the runner's own messages: a failure, or an oracle copy
                kind = rec["kind"]
                if kind == "party_error" and tolerant and not awaiting_setup and _may_be_lost(rec["role"]):
                    lost.add(rec["role"])  # a client that crashed: a dropout of this round, out for the run
                    record_lost(rec["role"], rec["problem"], rec.get("fix") or "")
                    advance()
                    continue
                if kind == "party_error":
                    raise PartyError(f"{rec['role']} failed: {rec['problem']}", rec.get("fix") or "rerun with --resume")
                state = pending.setdefault(int(rec["round"]), _round_state())
                if kind == MessageKind.ORACLE_UPDATE:
                    state["updates"][rec["client"]] = rec["vector"]
                else:  # oracle_aggregate
                    state["aggregate"] = (rec["vector"], rec["weights"])
            elif isinstance(rec, PartyRoundRecord):
                writer.write(rec)
                state = pending.setdefault(rec.round, _round_state())
                state["parties"] += 1
                state["reported"].add(_party_name(rec))
                if rec.role == "client" and rec.client == 0:
                    state["metrics"] = {k: getattr(rec, k) for k in QUALITY_FIELDS}
                if rec.role == "aggregator" and rec.arrived is not None:  # faults: who arrived, who left
                    state["faults"] = {
                        "selected": len(rec.selected or ()),
                        "arrived": len(rec.arrived),
                        "dropped": dict(rec.dropped or {}),
                        "skipped": rec.skipped,
                        "skip_reason": rec.skip_reason,
                    }
            else:
                if isinstance(rec, PartySetupRecord):
                    awaiting_setup.discard(_party_name(rec))
                writer.write(rec)
                continue
            advance()

    @staticmethod
    def _error(state: dict[str, Any]) -> dict[str, Any]:
        if state["aggregate"] is None:
            return {}
        got, weights = state["aggregate"]
        if not weights:  # a skipped round (too few clients arrived): no aggregate to check
            return {}
        if any(int(i) not in state["updates"] for i in weights):  # a client killed before its oracle copy left
            return {}
        want = sum(float(w) * state["updates"][int(i)].astype(np.float64) for i, w in weights.items())
        err = np.abs(got.astype(np.float64) - want)
        return {"max_abs_error": float(err.max()), "mean_abs_error": float(err.mean())}


def _load_avg() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _may_be_lost(name: str) -> bool:
    """A party whose death is a client's dropout: a client process other than the evaluating client 0 (which
    holds the test set and reports the global model's accuracy), or such a client's offload engine."""
    kind, _, index = name.rpartition("-")
    return kind in ("client", "engine") and index.isdigit() and index != "0"


def _lost_share_holder(config: Configuration, started: Started) -> str | None:
    """The share holder whose death ended ``config``'s run, where its policy is to skip that round (else None)."""
    params = config.mode_params
    if not isinstance(params, SecretSharingParams) or params.on_holder_loss != "skip":
        return None
    for name, proc in started.parties.items():
        if name.startswith("aggregator-"):
            proc.join(timeout=5)  # a client may report the closed connection before the holder's exit is seen
            if proc.exitcode not in (None, 0):
                return name
    return None


def _round_state() -> dict[str, Any]:
    return {"parties": 0, "updates": {}, "aggregate": None, "metrics": {}, "reported": set()}


def _party_name(rec: PartyRoundRecord | PartySetupRecord) -> str:
    return f"client-{rec.client}" if rec.role == "client" else rec.role


def _names(parties: set[str]) -> str:
    ordered = sorted(parties, key=lambda n: (len(n), n))
    return ", ".join(ordered[:8]) + (f" and {len(ordered) - 8} more" if len(ordered) > 8 else "")
