"""An overhead model in the manner of the confidential-FL papers.

Each configuration's cost is written as the raw baseline times (1 + sum of
non-negative coefficients for the mechanisms it uses): per-adapter encrypted
fraction, offload, per-layer packing. The coefficients are fitted by
non-negative least squares across configurations; R² says how well.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import nnls

from hebench.results.summary import SummaryRow


def features(row: SummaryRow) -> dict[str, float]:
    out: dict[str, float] = {}
    if not row.is_baseline:
        out[f"HE encrypt ({row.adapter}) × encrypted fraction"] = row.encrypted_fraction
    if row.uses_engines:
        out["offload engine"] = 1.0
    if row.packing == "per-layer":
        out["per-layer packing"] = 1.0
    return out


def fit(rows: Sequence[SummaryRow], metric: str) -> dict[str, Any] | None:
    """The model for one metric (a SummaryRow field); None without a raw row and two others to fit."""
    raw = next((r for r in rows if r.is_baseline and getattr(r, metric)), None)
    usable = [r for r in rows if getattr(r, metric) and not r.is_baseline]
    if raw is None or len(usable) < 2:
        return None
    feats = [features(r) for r in usable]
    names = sorted({k for f in feats for k in f})
    a = np.array([[f.get(n, 0.0) for n in names] for f in feats])
    b = np.array([getattr(r, metric) / getattr(raw, metric) - 1.0 for r in usable])
    coef, _ = nnls(a, b)
    pred = a @ coef
    ss_res = float(((b - pred) ** 2).sum())
    ss_tot = float(((b - b.mean()) ** 2).sum())
    return {
        "metric": metric,
        "baseline": getattr(raw, metric),
        "coefficients": dict(zip(names, coef.tolist(), strict=True)),
        "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res < 1e-12 else 0.0),
        "points": len(usable),
        "residuals": {r.config: float(e) for r, e in zip(usable, b - pred, strict=True)},
    }
