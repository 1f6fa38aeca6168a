"""Peak RSS is the process's own: a spawned child does not inherit its parent's high-water mark."""

from __future__ import annotations

import multiprocessing as mp
import sys

import numpy as np
import pytest

from hebench.measure.memory import peak_rss_bytes


def _child_peak(out) -> None:
    out.put(peak_rss_bytes())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss survives exec on Linux")
def test_a_spawned_process_reports_its_own_peak_not_its_parents():
    ballast = np.ones(400_000_000 // 8)  # 400 MB touched in the parent before the child starts
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_child_peak, args=(out,))
    child.start()
    child_peak = out.get(timeout=120)
    child.join()
    assert peak_rss_bytes() >= ballast.nbytes
    assert child_peak < ballast.nbytes  # ru_maxrss would report the parent's 400 MB here
