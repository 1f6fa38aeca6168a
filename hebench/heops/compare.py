"""``hebench compare libraries``: every adapter, every size, each in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from hebench import errors
from hebench.crypto.registry import adapter_class, status
from hebench.heops.operations import OperationPlan
from hebench.measure.environment import pin_threads

DEFAULT_SIZES = (4096, 1_206_590)
DEFAULT_ADAPTERS = (
    "plain",
    "paillier",
    "tenseal-ckks",
    "tenseal-bfv",
    "pyfhel-ckks",
    "pyfhel-bfv",
    "seal-bfv",  # compact HE (seeded symmetric BFV, packed values)
    "seal-ckks",
    "openfhe-ckks",  # CPython 3.10 / 3.12 only: elsewhere listed as skipped, with the reason
    "openfhe-bfv",
)


@dataclass(frozen=True)
class Skipped:
    """An adapter left out because its library does not import here: the registry's reason and install hint."""

    adapter: str
    reason: str
    install_hint: str


def split_available(names: Iterable[str]) -> tuple[list[str], list[Skipped]]:
    """The adapters that import here, and the others with why (an unknown name raises before anything runs)."""
    ready, skipped = [], []
    for name in names:
        st = status(name)
        if st.available:
            ready.append(name)
        else:
            skipped.append(Skipped(name, st.reason, st.install_hint))
    return ready, skipped


def run_in_worker(plan: OperationPlan, threads: int = 1, timeout_s: float | None = None) -> dict[str, Any]:
    """Run a plan in a fresh interpreter pinned to ``threads`` threads."""
    env = {**os.environ, **pin_threads(threads)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hebench.heops.worker"],
            input=json.dumps(asdict(plan)),
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise errors.HebenchError(
            f"measuring '{plan.adapter}' at size {plan.size} took longer than {timeout_s:.0f} s",
            "lower --budget or the vector size",
        ) from err
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        reply = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr or proc.stdout)[-800:]
        raise errors.HebenchError(
            f"the worker measuring '{plan.adapter}' died (exit {proc.returncode}): {tail.strip()}",
            "run `hebench backends` to check the library; report a bug if it persists",
        ) from None
    if "error" in reply:
        err = reply["error"]
        cls = getattr(errors, err["type"], errors.HebenchError)
        raise cls(err["problem"], err.get("fix", ""))
    reply["ok"]["threads"] = threads
    return reply["ok"]


def compare(
    adapters: Iterable[str],
    sizes: Iterable[int],
    params: dict[str, dict[str, Any]] | None = None,
    *,
    threads: int = 1,
    repeats: int = 5,
    budget_s: float = 20.0,
    clients: int = 3,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[str, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure each adapter at each size; ``on_result`` sees each record as it lands."""
    adapters, sizes = list(adapters), list(sizes)
    for name in adapters:
        adapter_class(name)  # unknown or unavailable: fail before measuring anything
    for size in sizes:
        if size < 1:
            raise errors.ParameterError(f"vector size {size} must be >= 1", "pass --sizes with positive integers")
    results = []
    for name in adapters:
        for size in sizes:
            if on_start:
                on_start(name, size)
            adapter_params = dict((params or {}).get(name, {}))
            if "threads" in adapter_class(name).params_type.model_fields:
                adapter_params.setdefault("threads", threads)
            plan = OperationPlan(name, adapter_params, size, clients, repeats, budget_s)
            record = run_in_worker(plan, threads=threads, timeout_s=max(120.0, budget_s * 40))
            results.append(record)
            if on_result:
                on_result(record)
    return results


def calibration(results: list[dict[str, Any]], environment: dict[str, Any]) -> dict[str, Any]:
    """Per-operation costs of this host, for projecting an offload engine on it."""
    ops = {}
    for rec in results:
        per = {
            name: {"cpu_s_per_value": m["cpu_s_per_value"], "wall_s_per_value": m["wall_s_per_value"]}
            for name, m in rec["operations"].items()
            if "cpu_s_per_value" in m
        }
        ops.setdefault(rec["adapter"], {})[str(rec["size"])] = {
            "params": rec["info"]["params"],
            "operations": per,
            "keygen_s": rec["operations"]["keygen"]["wall_s"]["median"],
        }
    return {"schema": "hebench.calibration/1", "environment": environment, "adapters": ops}
