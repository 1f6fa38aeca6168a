"""An overhead model in the manner of the confidential-FL papers.

Each configuration's cost is written as the raw baseline times (1 + sum of
non-negative coefficients for the mechanisms it uses): per-adapter encrypted
fraction, offload, per-layer packing. The coefficients are fitted by
non-negative least squares across configurations; R² says how well.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import nnls


def features(row: dict[str, Any], ratio: float) -> dict[str, float]:
    out: dict[str, float] = {}
    if row["mode"] != "raw":
        out[f"HE encrypt ({row['adapter']}) × encrypted fraction"] = ratio
    if row["mode"] == "offload":
        out["offload engine"] = 1.0
    if row.get("packing") == "per-layer":
        out["per-layer packing"] = 1.0
    return out


def fit(rows: list[dict[str, Any]], metric: str, ratios: dict[str, float]) -> dict[str, Any] | None:
    raw = next((r for r in rows if r["mode"] == "raw" and r.get(metric)), None)
    usable = [r for r in rows if r.get(metric) and r["mode"] != "raw"]
    if raw is None or len(usable) < 2:
        return None
    feats = [features(r, ratios.get(r["config"], 1.0)) for r in usable]
    names = sorted({k for f in feats for k in f})
    a = np.array([[f.get(n, 0.0) for n in names] for f in feats])
    b = np.array([r[metric] / raw[metric] - 1.0 for r in usable])
    coef, _ = nnls(a, b)
    pred = a @ coef
    ss_res = float(((b - pred) ** 2).sum())
    ss_tot = float(((b - b.mean()) ** 2).sum())
    return {
        "metric": metric,
        "baseline": raw[metric],
        "coefficients": dict(zip(names, coef.tolist(), strict=True)),
        "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res < 1e-12 else 0.0),
        "points": len(usable),
        "residuals": {r["config"]: float(e) for r, e in zip(usable, b - pred, strict=True)},
    }
