"""What secagg's active model costs beside its honest-but-curious variant (today's protocol), per client and at the
aggregator, at 8, 32 and 100 clients with 0 % and 10 % dropout, measured in the same run.

The active model adds, per client: an Ed25519 signature on its advertised keys, the whole signed member list
(every member's two public keys and signature, in place of its neighbours' keys) with one verification per member,
the member list's digest sealed into each share, and the consistency round: one round trip, a signature on the
survivor set, and the survivors' signatures received and verified before the unmask. Each point runs both variants
on the same vectors and dropped clients (``hebench.bench.dropouts.secagg_row``: one thread per client over
loopback channels; the dropped clients leave after sharing their keys, the costly case), ``repeats`` times
interleaved, and reports the medians and active / honest-but-curious per figure. CPU is thread CPU (the
aggregator's thread, each client's), so the machine's load matters less than for wall time; the load is recorded.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hebench.bench.registry import study

CLIENTS = (8, 32, 100)
RATES = (0.0, 0.1)
VALUES = 20_000  # values per update
REPEATS = 3
VARIANTS = ("honest-but-curious", "active")
FIGURES = {  # ratio name: the row's figure
    "client_cpu": "client_cpu_s",
    "client_bytes": "client_bytes",
    "server_cpu": "round_cpu_s",
    "server_bytes": "aggregator_bytes",
    "round_wall": "round_wall_s",
}


def _median(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Every number the median of the repeats (nested dicts alike); a failed repeat's row as it is."""
    failed = [r for r in rows if "failed" in r]
    if failed:
        return {**failed[0], "repeats": len(rows)}

    def merge(values: list[Any]) -> Any:
        if isinstance(values[0], dict):
            return {k: merge([v[k] for v in values]) for k in values[0] if all(k in v for v in values)}
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return float(np.median(values))
        return values[0]

    return {**merge(rows), "repeats": len(rows)}


def point(clients: int, rate: float, values: int, repeats: int) -> dict[str, Any]:
    """Both variants at one (clients, dropout rate), interleaved; medians and active / honest-but-curious."""
    from hebench.bench.dropouts import SECAGG_SHARES, SECAGG_THRESHOLD, secagg_row
    from hebench.protections.secagg.params import SecAggParams

    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for _ in range(repeats):
        for variant in VARIANTS:
            params = SecAggParams(num_shares=SECAGG_SHARES, reconstruction_threshold=SECAGG_THRESHOLD, model=variant)
            runs[variant].append(secagg_row(clients, rate, values, params))
    rows = {v: _median(runs[v]) for v in VARIANTS}
    hbc, active = rows["honest-but-curious"], rows["active"]
    out: dict[str, Any] = {"clients": clients, "dropout": rate, **rows}
    if "failed" not in hbc and "failed" not in active:
        out["active_over_honest_but_curious"] = {
            name: active[key] / hbc[key] if hbc[key] > 0 else None for name, key in FIGURES.items()
        }
        out["active_extra"] = {key: active[key] - hbc[key] for key in FIGURES.values()}
    return out


@study("secagg_active")
def secagg_active(
    clients: tuple[int, ...] = CLIENTS, rates: tuple[float, ...] = RATES, values: int = VALUES, repeats: int = REPEATS
) -> dict[str, Any]:
    """secagg's active model (signed members, derived ring, consistency round) against its honest-but-curious
    variant: bytes and CPU per client and at the aggregator, at 8, 32, 100 clients, 0 % and 10 % dropout.

    Both variants on the same vectors and dropped clients in the same run, ``repeats`` rounds each, interleaved;
    medians and the ratio active / honest-but-curious per figure."""
    from hebench.bench.dropouts import SECAGG_SHARES, SECAGG_THRESHOLD, secagg_row
    from hebench.protections.secagg.params import SecAggParams

    load_before = os.getloadavg()
    for variant in VARIANTS:  # warm-up: imports and first-call caches
        secagg_row(4, 0.0, 64, SecAggParams(num_shares=3, reconstruction_threshold=2, model=variant))
    points = [point(n, rate, values, repeats) for n in clients for rate in rates]
    return {
        "benchmark": "secagg_active",
        "parameters": {
            "values_per_update": values,
            "num_shares": SECAGG_SHARES,
            "reconstruction_threshold": SECAGG_THRESHOLD,
            "dropout_stage": "after sharing keys, before the masked upload (pairwise masks rebuilt)",
            "repeats": repeats,
        },
        "figures": "client_cpu_s, client_bytes: a surviving client's thread CPU and channel bytes (mean over "
        "survivors); round_cpu_s, aggregator_bytes: the aggregator thread's CPU over every stage and its channels' "
        "bytes; round_wall_s: the aggregator's round, wall clock",
        "load_average": {"before": list(load_before), "after": list(os.getloadavg()), "cpus": os.cpu_count()},
        "points": points,
    }
