"""Per-operation measurement of one adapter at one vector size (runs inside a worker).

Slow adapters (Paillier) can take hours on 1.2 M values. When one operation
on the whole vector would exceed ``budget_s``, it is measured on a prefix of
whole ciphertexts and the per-value cost is reported with
``extrapolated: true`` and ``measured_values`` — never passed off as a
full-vector measurement.

Memory: the worker's own peak (``VmHWM``, which starts afresh at exec), not
``ru_maxrss``, which on Linux is in kB and survives exec, so a worker started
by a large parent would report the parent's peak. The peak before key
generation (interpreter, imports) is reported beside it, so what the adapter
itself held is their difference.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hebench.crypto import create_adapter, load_adapter
from hebench.measure.memory import peak_rss_bytes
from hebench.measure.timing import Measurement, measure

OPERATIONS = ("keygen", "encrypt", "serialize", "deserialize", "add", "multiply_plain", "decrypt")


@dataclass(frozen=True)
class OperationPlan:
    adapter: str
    params: dict[str, Any] = field(default_factory=dict)
    size: int = 4096
    clients: int = 3  # summands in the precision check
    repeats: int = 5
    budget_s: float = 20.0
    seed: int = 0


def _per_value(m: Measurement, values: int) -> dict[str, Any]:
    out = m.to_dict()
    out["wall_s_per_value"] = m.wall.median / values
    out["cpu_s_per_value"] = m.cpu.median / values
    return out


def run_plan(plan: OperationPlan) -> dict[str, Any]:
    """Measure every operation; returns a JSON-able record."""
    rng = np.random.default_rng(plan.seed)
    baseline = peak_rss_bytes()  # interpreter and imports, before any key exists
    adapter = create_adapter(plan.adapter, plan.params)
    keygen = measure(adapter.keygen, repeats=min(plan.repeats, 3), budget_s=plan.budget_s, warmup=1)
    public = load_adapter(adapter.export_keys(secret=False))  # the aggregator's view

    # Probe one ciphertext to size the measured prefix.
    slots = adapter.slots
    probe = rng.uniform(-1, 1, min(slots, plan.size)).astype(np.float32)
    t0 = time.perf_counter()
    adapter.encrypt(probe)
    per_chunk = time.perf_counter() - t0
    chunks = math.ceil(plan.size / slots)
    fit = max(1, int(plan.budget_s / max(per_chunk, 1e-9) / 4))
    measured = plan.size if chunks <= fit else fit * slots
    extrapolated = measured < plan.size

    vectors = [rng.uniform(-1, 1, measured).astype(np.float32) for _ in range(plan.clients)]
    # sample-count weights whose total stays within the adapter's declared headroom (max_summands)
    high = max(2, min(100, adapter.params.max_summands // plan.clients + 1))
    weights = rng.integers(1, high, plan.clients).astype(np.float64)
    weights /= weights.sum()
    enc = adapter.encrypt(vectors[0])
    blob = public.serialize(enc)
    product = public.multiply_plain(enc, float(weights[0]))
    ops = {
        "encrypt": measure(lambda: adapter.encrypt(vectors[0]), repeats=plan.repeats, budget_s=plan.budget_s),
        "serialize": measure(lambda: public.serialize(enc), repeats=plan.repeats, budget_s=plan.budget_s),
        "deserialize": measure(lambda: public.deserialize(blob), repeats=plan.repeats, budget_s=plan.budget_s),
        "add": measure(lambda: public.add(enc, enc), repeats=plan.repeats, budget_s=plan.budget_s),
        "multiply_plain": measure(
            lambda: public.multiply_plain(enc, float(weights[0])), repeats=plan.repeats, budget_s=plan.budget_s
        ),
        "decrypt": measure(lambda: adapter.decrypt(enc), repeats=plan.repeats, budget_s=plan.budget_s),
    }

    # Precision: an N-client weighted sum, aggregated with public keys only.
    total = None
    for vec, w in zip(vectors, weights, strict=True):
        term = public.multiply_plain(public.deserialize(public.serialize(adapter.encrypt(vec))), float(w))
        total = term if total is None else public.add(total, term)
    assert total is not None
    got = adapter.decrypt(adapter.deserialize(public.serialize(total)))
    want = sum(w * v.astype(np.float64) for v, w in zip(vectors, weights, strict=True))
    abs_err = np.abs(got - want)

    fresh_bytes = len(blob)
    aggregated_bytes = len(public.serialize(product))
    scale = plan.size / measured
    info = adapter.info()
    return {
        "adapter": plan.adapter,
        "size": plan.size,
        "measured_values": measured,
        "extrapolated": extrapolated,
        "ciphertexts": chunks,
        "info": info.__dict__,
        "operations": {
            "keygen": keygen.to_dict(),
            **{name: _per_value(m, measured) for name, m in ops.items()},
        },
        "bytes": {
            "fresh_total": round(fresh_bytes * scale),
            "fresh_per_value": fresh_bytes / measured,
            "aggregated_per_value": aggregated_bytes / measured,
            "recompressed_per_value": len(zlib.compress(blob, 6)) / measured,
            "expansion_over_float32": fresh_bytes / (4 * measured),
            "public_keys": len(adapter.export_keys(secret=False)),
            "secret_keys": len(adapter.export_keys(secret=True)),
            "secret_key": len(adapter.secret_key_bytes()),
        },
        "error": {
            "clients": plan.clients,
            "max_abs": float(abs_err.max()),
            "max_rel": float((abs_err / np.maximum(np.abs(want), 1e-12)).max()),
            "stated_precision": info.precision,
            "within_precision": bool(abs_err.max() <= info.precision),
        },
        "peak_rss_bytes": peak_rss_bytes(),
        "baseline_rss_bytes": baseline,
    }
