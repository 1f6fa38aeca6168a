"""Run a suite: each configuration as its own set of party processes, records as JSON lines.

The runner is the measurement harness, not a party: it starts the key
authority, the aggregator and the clients, writes what they report, and
checks the decrypted aggregate against plaintext FedAvg (the clients hand it
their plaintext updates out of band, over a local queue the aggregator never
sees). Every completed round is on disk before the next starts; ``resume``
continues from the last one.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import queue
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hebench.data.federated import FederatedData
from hebench.data.registry import load_federated
from hebench.errors import PartyError
from hebench.fl.aggregator import run_aggregator
from hebench.fl.client import run_client
from hebench.fl.key_authority import run_key_authority
from hebench.fl.party import PartyContext, party_main, safe_label
from hebench.measure.environment import capture
from hebench.models import build_model, parameter_count
from hebench.net.certs import TLSFiles, make_certificates
from hebench.offload.engine import EngineConfig, local_engine_main
from hebench.offload.host import run_host
from hebench.offload.placement import place
from hebench.results import ResultWriter, read_records
from hebench.results.records import AttackSummaryRecord, RoundRecord
from hebench.suite import Configuration, Suite

RESULTS_FILE = "results.jsonl"


def _parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise PartyError(f"engine address '{text}' is not HOST:PORT", "write e.g. offload.engines: ['dpu0:7000']")
    return host, int(port)


@dataclass(frozen=True)
class RunEvent:
    """Progress callback payload."""

    config: str
    round: int | None  # None: configuration starting (or skipped, with ``skipped``)
    record: dict[str, Any] | None = None
    skipped: bool = False


def completed_rounds(run_dir: Path) -> dict[str, int]:
    """Configuration label → number of rounds already completed on disk."""
    path = run_dir / RESULTS_FILE
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
    def __init__(self, suite: Suite, run_dir: Path, on_event: Callable[[RunEvent], None] | None = None) -> None:
        self.suite = suite
        self.run_dir = run_dir
        self.on_event = on_event or (lambda event: None)

    def run(self, resume: bool = False) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        results = self.run_dir / RESULTS_FILE
        if results.exists() and not resume:
            raise PartyError(
                f"{results} already holds results",
                "pass --resume to continue that run, or --out to a new folder",
            )
        done = completed_rounds(self.run_dir) if resume else {}
        (self.run_dir / "suite.yaml").write_text(yaml.safe_dump(self.suite.model_dump(mode="json"), sort_keys=False))
        data = load_federated(self.suite.data, self.suite.seed)
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
            for config in self.suite.configurations:
                start = done.get(config.label, 0)
                if start >= self.suite.training.rounds:
                    self.on_event(RunEvent(config.label, None, skipped=True))
                    continue
                self._run_config(config, data, start, writer)
            self._run_attacks(writer, resume)
        return results

    def _run_attacks(self, writer: ResultWriter, resume: bool) -> None:
        """The suite's privacy section, after the runs: what each configuration's aggregator could reconstruct."""
        from hebench.inversion.campaign import plans_for, run_campaign

        plans = plans_for(self.suite)
        if resume:
            summaries = read_records(self.run_dir / RESULTS_FILE, kind=AttackSummaryRecord).of(AttackSummaryRecord)
            finished = {r.plan for r in summaries}
            plans = [p for p in plans if p.name not in finished]
        for plan in plans:
            self.on_event(RunEvent(f"attack {plan.name}", None))
            run_campaign([plan], writer, self.run_dir / "attacks")

    def _initial(self, config: Configuration, start: int) -> np.ndarray | None:
        if start == 0:
            return None
        path = self.run_dir / "checkpoints" / safe_label(config.label) / f"round-{start - 1}.npy"
        if not path.exists():
            raise PartyError(f"cannot resume '{config.label}': checkpoint {path} is missing", "rerun without --resume")
        return np.load(path)

    def _configuration_record(self, config: Configuration, data: FederatedData, start: int) -> dict[str, Any]:
        """What a configuration's records are about (written before its first round)."""
        suite = self.suite
        model = build_model(suite.model.name, data.input_shape, data.num_classes, suite.model.hidden)
        return {
            "config": config.label,
            "mode": config.mode,
            "adapter": config.adapter,
            "params": config.params,
            "packing": config.packing,
            "selective": config.selective.model_dump(mode="json") if config.selective else None,
            "model": suite.model.name,
            "parameters": parameter_count(model),
            "start_round": start,
        }

    def _run_config(self, config: Configuration, data: FederatedData, start: int, writer: ResultWriter) -> None:
        suite = self.suite
        writer.write("configuration", self._configuration_record(config, data, start))
        self.on_event(RunEvent(config.label, None))
        base = PartyContext(
            suite=suite,
            config=config,
            run_dir=self.run_dir,
            authkey=secrets.token_bytes(32),
            start_round=start,
            input_shape=data.input_shape,
            num_classes=data.num_classes,
            initial=self._initial(config, start),
            cores=self._host_cores(),
        )
        spawn = mp.get_context("spawn")
        records: Any = spawn.Queue()
        procs: dict[str, Any] = {}
        controls: dict[str, Any] = {}

        def start_party(name: str, body: Callable, ctx: PartyContext) -> None:
            parent, child = spawn.Pipe()
            proc = spawn.Process(target=party_main, args=(name, body, ctx, child, records), name=name, daemon=True)
            proc.start()
            procs[name], controls[name] = proc, parent

        try:
            engines, tls_dir = self._start_engines(config, spawn, procs, controls, base)
            start_party("key_authority", run_key_authority, base)
            ka_address = self._control_recv(controls["key_authority"], procs, records, "key_authority")
            controls["key_authority"].send((engines, tls_dir))
            start_party("aggregator", run_aggregator, base)
            agg_address = self._control_recv(controls["aggregator"], procs, records, "aggregator")
            controls["aggregator"].send(ka_address)
            body = run_host if config.mode == "offload" else run_client
            for i, shard in enumerate(data.clients):
                test = (data.test_x, data.test_y) if i == 0 else None
                ctx = dataclasses.replace(base, client_index=i, data=shard, test=test)
                start_party(f"client-{i}", body, ctx)
                engine = (engines[i], tls_dir) if engines else None
                controls[f"client-{i}"].send((ka_address, agg_address, engine))
            self._collect(config, start, records, procs, writer)
        finally:
            for proc in procs.values():
                proc.join(timeout=10)
                if proc.is_alive():
                    proc.terminate()
                    proc.join(timeout=5)
            records.close()

    def _host_cores(self) -> tuple[int, ...] | None:
        """With offload in the suite, every mode's host-side parties share the same cores, so that
        offload is compared with raw and host-he on equal host hardware (the engine adds its own)."""
        if any(c.mode == "offload" for c in self.suite.configurations) and not self.suite.offload.engines:
            return place(self.suite.offload).host_cores
        return None

    def _start_engines(
        self, config: Configuration, spawn: Any, procs: dict[str, Any], controls: dict[str, Any], base: PartyContext
    ) -> tuple[list[tuple[str, int]], str | None]:
        """Engine endpoints for an offload configuration: remote ones from the suite, or local processes."""
        spec = self.suite.offload
        if config.mode != "offload":
            return [], None
        if spec.engines:
            return [_parse_address(a) for a in spec.engines], spec.tls_dir
        placement = place(spec)
        tls_dir = spec.tls_dir
        if spec.tls and not tls_dir:
            tls_dir = str(self.run_dir / "certs")
            make_certificates(Path(tls_dir), hosts=self.suite.data.clients)
        endpoints = []
        for i in range(self.suite.data.clients):
            tls = (
                TLSFiles(Path(tls_dir) / "engine.pem", Path(tls_dir) / "engine-key.pem", Path(tls_dir) / "ca.pem")
                if tls_dir
                else None
            )
            transcripts = None
            if self.suite.measure.transcripts:
                transcripts = str(self.run_dir / "transcripts" / safe_label(config.label) / f"engine-{i}")
            engine_config = EngineConfig(
                tls=tls,
                authkey=None if tls else base.authkey,
                cores=placement.engine_cores,
                timeout_s=self.suite.measure.timeout_s,
                transcripts=transcripts,
            )
            parent, child = spawn.Pipe()
            proc = spawn.Process(target=local_engine_main, args=(engine_config, child), name=f"engine-{i}", daemon=True)
            proc.start()
            procs[f"engine-{i}"], controls[f"engine-{i}"] = proc, parent
            endpoints.append(tuple(self._control_recv(parent, procs, None, f"engine-{i}")))
        return endpoints, tls_dir

    def _control_recv(self, control: Any, procs: dict[str, Any], records: Any, name: str) -> Any:
        deadline = time.monotonic() + self.suite.measure.timeout_s
        while time.monotonic() < deadline:
            if control.poll(0.2):
                try:
                    return control.recv()
                except EOFError:  # the party died before answering: report why
                    procs[name].join(timeout=10)
            self._check_alive(procs, records)
        raise PartyError(f"{name} did not start within {self.suite.measure.timeout_s:.0f} s", "check the machine load")

    def _check_alive(self, procs: dict[str, Any], records: Any) -> None:
        for name, proc in procs.items():
            if proc.exitcode not in (None, 0) and records is not None:
                problem, fix = f"{name} exited with code {proc.exitcode}", "see the message above"
                try:
                    while True:
                        rec = records.get(timeout=1.0)
                        if rec.get("kind") == "party_error":
                            problem, fix = f"{rec['role']} failed: {rec['problem']}", rec.get("fix", "")
                            break
                except queue.Empty:
                    pass
                raise PartyError(problem, fix or "completed rounds are kept; fix the cause and rerun with --resume")

    def _collect(self, config: Configuration, start: int, records: Any, procs: dict, writer: ResultWriter) -> None:
        suite, label = self.suite, config.label
        clients = suite.data.clients
        pending: dict[int, dict[str, Any]] = {}
        round_index = start
        deadline = time.monotonic() + suite.measure.timeout_s
        while round_index < suite.training.rounds:
            try:
                rec = records.get(timeout=0.5)
            except queue.Empty:
                self._check_alive(procs, records)
                if time.monotonic() > deadline:
                    raise PartyError(
                        f"round {round_index} of '{label}' made no progress", "raise measure.timeout_s"
                    ) from None
                continue
            deadline = time.monotonic() + suite.measure.timeout_s
            kind = rec.pop("kind")
            if kind == "party_error":
                raise PartyError(f"{rec['role']} failed: {rec['problem']}", rec.get("fix") or "rerun with --resume")
            if kind in ("keygen", "party_setup", "mask_agreement", "flower_run", "hub_note"):
                writer.write(kind, {"config": label, **rec})
                continue
            r = int(rec["round"])
            state = pending.setdefault(r, {"parties": 0, "updates": {}, "aggregate": None, "metrics": {}})
            if kind == "oracle_update":
                state["updates"][rec["client"]] = rec["vector"]
            elif kind == "oracle_aggregate":
                state["aggregate"] = (rec["vector"], rec["weights"])
            else:
                writer.write("party_round", {"config": label, **rec})
                state["parties"] += 1
                if rec.get("role") == "client" and rec.get("client") == 0:
                    state["metrics"] = {k: rec[k] for k in ("accuracy", "loss") if k in rec}
            oracle_ready = not suite.measure.decryption_error or state["aggregate"] is not None
            while round_index in pending and pending[round_index]["parties"] == clients + 1 and oracle_ready:
                state = pending.pop(round_index)
                record = {"config": label, "round": round_index, **state["metrics"], **self._error(state)}
                writer.write("round", record)
                self.on_event(RunEvent(label, round_index, record))
                round_index += 1
                state = pending.get(round_index, {"aggregate": None})
                oracle_ready = not suite.measure.decryption_error or state.get("aggregate") is not None

    @staticmethod
    def _error(state: dict[str, Any]) -> dict[str, Any]:
        if state["aggregate"] is None:
            return {}
        got, weights = state["aggregate"]
        want = sum(float(w) * state["updates"][int(i)].astype(np.float64) for i, w in weights.items())
        err = np.abs(got.astype(np.float64) - want)
        return {"max_abs_error": float(err.max()), "mean_abs_error": float(err.mean())}
