"""Start-up of the ``hebench`` command: ``--version`` and ``--help`` in fresh interpreters.

Commands that do not train import no torch (subcommands load on first use), so these answer in well under
a second. Each is timed as a new process, as a user's shell starts it, beside two references measured in the
same run: a bare interpreter (the floor) and ``import torch`` (what every command paid before). The goal is
absolute (at most ``GOAL_S`` each, median over ``repeats``), and the ratio to the torch import is kept with it,
so a loaded machine shows in both.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from hebench.bench.registry import study

GOAL_S = 1.0  # "well under a second" on the project's 2-core VM
COMMANDS = {"hebench --version": ["-m", "hebench", "--version"], "hebench --help": ["-m", "hebench", "--help"]}
REFERENCES = {"python -c pass": ["-c", "pass"], "python -c 'import torch'": ["-c", "import torch"]}


def time_process(args: Sequence[str], repeats: int) -> list[float]:
    """Wall seconds of ``python ARGS`` in a fresh process, ``repeats`` times (the first one warms the disk cache
    and is left out)."""
    times = []
    env = {**os.environ, "COLUMNS": "80"}
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, env=env, check=True)
        if i:
            times.append(time.perf_counter() - t0)
    return times


@study("startup")
def startup(repeats: int = 5, commands: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """`hebench --version` and `--help` in fresh processes beside a bare interpreter and `import torch` (goal: under
    a second).

    Median wall time of each command and reference; the goal; each command's ratio to ``import torch``."""
    measured = {name: time_process(args, repeats) for name, args in {**(commands or COMMANDS), **REFERENCES}.items()}
    medians = {name: statistics.median(times) for name, times in measured.items()}
    torch_s = medians["python -c 'import torch'"]
    rows = [
        {
            "command": name,
            "median_s": medians[name],
            "min_s": min(measured[name]),
            "max_s": max(measured[name]),
            "vs_import_torch": medians[name] / torch_s,
            "goal_s": GOAL_S,
            "meets_goal": medians[name] <= GOAL_S,
        }
        for name in (commands or COMMANDS)
    ]
    return {
        "benchmark": "startup",
        "repeats": repeats,
        "load_avg": list(os.getloadavg()),
        "references_s": {name: medians[name] for name in REFERENCES},
        "rows": rows,
        "meets_goal": all(r["meets_goal"] for r in rows),
    }
