"""Stragglers and the round deadline: a client not ready to upload within ``round_deadline_s`` is late and left
out; a round with fewer arrivals than ``min_clients`` is skipped (the global model unchanged) and the run goes on.

A deadline of 1 ms makes every client late whatever the machine's speed (training takes longer), so the
outcome does not depend on timing: every round is skipped. The stragglers the clients record are the ones
the pure fault draw names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.config import parse_suite
from hebench.faults import fault_for
from hebench.results import read_records
from hebench.results.run_folder import RunFolder

pytestmark = pytest.mark.slow

SUITE = {
    "name": "late",
    "seed": 4,
    "data": {"dataset": "digits", "clients": 4},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2, "round_deadline_s": 0.001},
    "runtime": {"hosting": "pool", "workers": 1},
    "faults": {"stragglers": {"share": 0.5, "slowdown": 2}},
    "configurations": [{"mode": "raw"}],
}


@pytest.fixture(scope="module")
def late_run(tmp_path_factory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("late")
    path, out = folder / "suite.yaml", folder / "out"
    path.write_text(yaml.safe_dump(SUITE))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-report"])
    assert result.exit_code == 0, (result.output, result.exception)
    return out, result.output


def test_every_late_client_is_left_out_and_the_rounds_are_skipped(late_run):
    out, output = late_run
    rounds = sorted(read_records(out / "results.jsonl", kind="round").records, key=lambda r: r.round)
    assert [r.round for r in rounds] == [0, 1]
    for r in rounds:
        assert r.skipped and r.arrived == 0 and r.selected == 4
        assert r.dropped == {str(i): "late" for i in range(4)}
        assert r.max_abs_error is None  # no aggregate to check
    assert "skipped 0/4" in output  # the terminal's line per round
    folder = RunFolder(out)
    first, second = np.load(folder.checkpoint("raw", 0)), np.load(folder.checkpoint("raw", 1))
    assert np.array_equal(first, second)  # the global model stayed as it was


def test_the_stragglers_are_the_ones_the_fault_seed_draws(late_run):
    out, _ = late_run
    spec = parse_suite(SUITE).faults
    assert spec is not None
    resolved = spec.resolved(SUITE["seed"])
    clients = [r for r in read_records(out / "results.jsonl", kind="party_round").records if r.role == "client"]
    recorded = {(r.round, r.client) for r in clients if r.slowdown}
    drawn = {(r, c) for r in range(2) for c in range(4) if fault_for(resolved, r, c).slowdown != 1}
    assert recorded == drawn and drawn  # the seed gives at least one straggler
    assert all(r.dropout_phase == "late" for r in clients)


def test_the_report_has_a_dropouts_section_with_its_figure_and_table(late_run, tmp_path):
    from hebench.report.build import build_report

    out, _ = late_run
    html = build_report([out], tmp_path / "late.html").read_text()
    assert "Dropouts: what each protection pays" in html
    csv = (tmp_path / "late_files" / "dropouts.csv").read_text().splitlines()
    assert csv[1].startswith("raw,1.0,2,")  # every client late, both rounds skipped


def test_records_without_fault_fields_still_load():
    from hebench.results.records import record_from_json

    old = {"kind": "round", "config": "raw", "round": 0, "accuracy": 0.5}
    rec = record_from_json(old)
    assert rec.arrived is None and rec.dropped is None and rec.skipped is None  # type: ignore[attr-defined]
