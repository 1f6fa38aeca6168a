"""The main command's duration: ``hebench run suites/quickstart.yaml`` end to end, report included.

Runs the command as a user would (a subprocess, the report written at the end) and splits its wall time
into the configurations, the attacks and the rest (start-up, summary, report) from the records' own
timestamps. The load average before and after and the cores the command may use are recorded beside
it: on a shared machine the same suite takes longer, so the goal (at most 5 minutes on 2 cores) is
judged together with the load.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hebench.bench.registry import study
from hebench.results import read_records

QUICKSTART = Path(__file__).resolve().parents[2] / "suites" / "quickstart.yaml"
GOAL_S = 300.0


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def phases_of(records: list[dict[str, Any]], wall_s: float) -> dict[str, float]:
    """Wall seconds per configuration (from its configuration record to the next), attacks, and the rest of
    the command's ``wall_s`` (interpreter start-up, data, summary tables and the report)."""
    marks = [(r["config"], r["time"]) for r in records if r["kind"] == "configuration"]
    campaign = next((r for r in records if r["kind"] == "attack_campaign"), None)
    attacks_start = campaign["time"] - campaign["wall_s"] if campaign else records[-1]["time"]
    bounds = [t for _, t in marks[1:]] + [attacks_start]
    out = {f"configuration {name}": stop - start for (name, start), stop in zip(marks, bounds, strict=True)}
    if campaign:
        out["attacks"] = campaign["wall_s"]
    out["start-up, summary and report"] = wall_s - sum(out.values())
    return out


@study("main_command")
def main_command(suite: Path = QUICKSTART) -> dict[str, Any]:
    """The main command (`hebench run` on the quickstart) timed end to end, split by configuration, attacks and report.

    Time ``hebench run SUITE`` in a fresh folder; the figures, the load around it and the goal."""
    with tempfile.TemporaryDirectory() as tmp:
        load_before, cpu_before = os.getloadavg(), _children_cpu_s()
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "hebench", "run", str(suite), "--out", "run", "--format", "json"],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        cpu, load_after = _children_cpu_s() - cpu_before, os.getloadavg()
        if done.returncode != 0:
            return {"benchmark": "main_command", "error": done.stderr[-2000:] or done.stdout[-2000:]}
        summary = json.loads(done.stdout[done.stdout.index("{") :])
        records = [r.to_json() for r in read_records(Path(tmp) / "run" / "results.jsonl").records]
        report = Path(tmp) / summary["report"] if summary.get("report") else None
        phases = phases_of(records, wall)
        report_bytes = report.stat().st_size if report and report.exists() else None
    cores = len(os.sched_getaffinity(0))
    return {
        "benchmark": "main_command",
        "command": f"hebench run {suite.relative_to(suite.parents[1])}",
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_per_wall": cpu / wall,
        "cores": cores,
        "load_avg_before": list(load_before),
        "load_avg_after": list(load_after),
        "loaded_beyond_cores": max(load_before[0], load_after[0]) > cores,
        "phases_wall_s": phases,
        "phase_share": {name: s / wall for name, s in phases.items()},
        "configurations": sum(1 for r in records if r["kind"] == "configuration"),
        "attack_plans": sum(1 for r in records if r["kind"] == "attack_summary"),
        "report_bytes": report_bytes,
        "goal_s": GOAL_S,
        "meets_goal": wall <= GOAL_S,
    }
