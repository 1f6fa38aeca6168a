"""The environment a result was measured in, captured with every result."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import psutil

from hebench import __version__
from hebench.measure.cycles import cycles_unavailable_reason

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
LIBRARIES = ("numpy", "torch", "torchvision", "phe", "gmpy2", "tenseal", "Pyfhel", "openfhe", "sewar", "psutil")
FLAGS_OF_INTEREST = ("avx", "avx2", "avx512f", "avx512ifma", "aes", "sha_ni", "bmi2", "adx", "asimd", "sve")


def pin_threads(threads: int) -> dict[str, str]:
    """Environment for a worker process limited to ``threads`` threads."""
    return {name: str(threads) for name in THREAD_VARIABLES}


def _cpu_info() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), []
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model") and model in ("", platform.machine(), platform.processor()):
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = value.split()
    except OSError:
        pass
    return model, sorted(f for f in flags if f in FLAGS_OF_INTEREST)


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def capture() -> dict[str, Any]:
    """Versions, CPU, cores, affinity, load, thread settings and cycle availability."""
    model, flags = _cpu_info()
    reason = cycles_unavailable_reason()
    return {
        "hebench": __version__,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": model,
        "cpu_flags": flags,
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_avg": list(os.getloadavg()),
        "memory_bytes": psutil.virtual_memory().total,
        "threads": {name: os.environ.get(name) for name in THREAD_VARIABLES},
        "cycles": {"available": not reason, "source": "perf_event hw cycles" if not reason else None, "reason": reason},
        "libraries": library_versions(),
    }


def comparable(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Fields whose differences make two results not directly comparable."""
    keys = ("cpu_model", "logical_cores", "python", "machine")
    diffs = [k for k in keys if a.get(k) != b.get(k)]
    libs_a, libs_b = a.get("libraries", {}), b.get("libraries", {})
    diffs += [f"libraries.{k}" for k in libs_a if libs_a.get(k) != libs_b.get(k)]
    return diffs
