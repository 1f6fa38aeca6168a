"""Summary columns: max error over steady rounds like every other column; total CPU is host + engine."""

from __future__ import annotations

import json

import pytest

from hebench.analysis.summary import summarize_run
from hebench.results import read_records
from tests.results.runs import RUN


def _rows(folder):
    return {r.config: r for r in summarize_run(read_records(folder / "results.jsonl").records)}


def test_max_error_leaves_the_warm_up_round_out(tmp_path):
    lines = [json.loads(line) for line in (RUN / "results.jsonl").read_text().splitlines() if line.strip()]
    for rec in lines:
        if rec["kind"] == "round" and rec["round"] == 0:
            rec["max_abs_error"] = 0.5  # a cold first round's error: recorded, not a headline
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    rows = _rows(tmp_path)
    assert all(r.warmup_rounds == 1 for r in rows.values())
    assert rows["host-he/tenseal-ckks"].max_abs_error == pytest.approx(5.96e-08, rel=1e-3)
    assert all(r.max_abs_error < 0.5 for r in rows.values())


def test_total_cpu_is_the_hosts_and_its_engines_together():
    rows = _rows(RUN)
    nic, he = rows["offload/tenseal-ckks"], rows["host-he/tenseal-ckks"]
    assert nic.total_cpu_s_per_round == pytest.approx(nic.client_cpu_s_per_round + nic.engine_cpu_s_per_round)
    assert he.total_cpu_s_per_round == pytest.approx(he.client_cpu_s_per_round)  # no engine: the host's own
    assert nic.total_cpu_overhead_vs_raw > nic.cpu_overhead_vs_raw
    assert len(nic.total_cpu_s_rounds) == nic.steady_rounds
