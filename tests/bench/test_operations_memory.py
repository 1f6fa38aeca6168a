"""The per-adapter memory figure is the worker's own peak, in bytes, not its parent's."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from hebench.heops.compare import run_in_worker
from hebench.heops.operations import OperationPlan


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss survives exec on Linux")
def test_a_worker_reports_its_own_peak_not_the_large_parents():
    ballast = np.ones(600_000_000 // 8)  # 600 MB touched here, before the worker is started
    record = run_in_worker(OperationPlan("plain", size=256, repeats=1, budget_s=1.0), timeout_s=120)
    assert ballast.sum() > 0
    # ru_maxrss * 1024 would report at least the parent's 600 MB (it survives fork + exec)
    assert record["baseline_rss_bytes"] <= record["peak_rss_bytes"] < ballast.nbytes
    assert record["baseline_rss_bytes"] > 10 * 2**20  # bytes (an interpreter with numpy), not kB
