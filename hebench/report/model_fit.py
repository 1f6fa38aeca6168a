"""An overhead model in the manner of the confidential-FL papers, fitted only where the data can support it.

Each configuration's cost is written as the raw baseline times (1 + Σ coefficient ×
mechanism): per-adapter encrypted fraction, offload, per-layer packing. Coefficients
are signed (a negative one is a saving, e.g. offload's host CPU) and fitted by least
squares. A cost is fitted only over the mechanisms that can change it: offload
uploads exactly what host-side HE does, so it has no upload-bytes term. A fit with no
degrees of freedom (as many coefficients as configurations, R² = 1 by construction),
or whose mechanisms never vary apart, gives a note instead of numbers; a poor fit
(R² below POOR_FIT) carries a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hebench.results.summary import SummaryRow

POOR_FIT = 0.5
ENCRYPT, OFFLOAD, PER_LAYER = "encrypt", "offload", "per-layer"
# Which mechanisms can change each cost; a metric not named here may depend on all of them.
AFFECTS: Mapping[str, frozenset[str]] = {
    "client_cpu_s_per_round": frozenset({ENCRYPT, OFFLOAD, PER_LAYER}),
    "upload_bytes_per_client_round": frozenset({ENCRYPT, PER_LAYER}),  # the engine forwards what the host would
    "round_wall_s": frozenset({ENCRYPT, OFFLOAD, PER_LAYER}),
}


@dataclass(frozen=True)
class OverheadFit:
    """One metric's model: coefficients (× raw) with R² and degrees of freedom, or a note saying why none."""

    metric: str
    baseline: float
    points: int  # configurations fitted (raw excluded)
    mechanisms: tuple[str, ...]
    dof: int  # points − independent coefficients
    coefficients: Mapping[str, float] | None = None
    r2: float | None = None
    residuals: Mapping[str, float] = field(default_factory=dict)
    note: str | None = None  # why there are no coefficients
    warning: str | None = None  # a fit shown, but poor


def features(row: SummaryRow, metric: str = "") -> dict[str, float]:
    """The mechanisms ``row`` uses that can change ``metric``, each with its weight."""
    allowed = AFFECTS.get(metric, frozenset({ENCRYPT, OFFLOAD, PER_LAYER}))
    out: dict[str, float] = {}
    if not row.is_baseline and ENCRYPT in allowed:
        out[f"HE encrypt ({row.adapter}) × encrypted fraction"] = row.encrypted_fraction
    if row.uses_engines and OFFLOAD in allowed:
        out["offload engine"] = 1.0
    if row.packing == "per-layer" and PER_LAYER in allowed:
        out["per-layer packing"] = 1.0
    return out


def fit(rows: Sequence[SummaryRow], metric: str) -> OverheadFit | None:
    """The model for one metric (a SummaryRow field); None without a raw row and another to compare."""
    raw = next((r for r in rows if r.is_baseline and getattr(r, metric)), None)
    usable = [r for r in rows if getattr(r, metric) and not r.is_baseline]
    if raw is None or not usable:
        return None
    base = float(getattr(raw, metric))
    feats = [features(r, metric) for r in usable]
    names = tuple(sorted({k for f in feats for k in f}))
    a = np.array([[f.get(n, 0.0) for n in names] for f in feats], dtype=float).reshape(len(usable), len(names))
    b = np.array([getattr(r, metric) / base - 1.0 for r in usable])
    rank = int(np.linalg.matrix_rank(a)) if names else 0
    dof = len(usable) - len(names)
    common = {"metric": metric, "baseline": base, "points": len(usable), "mechanisms": names, "dof": dof}
    if dof <= 0:
        return OverheadFit(
            **common,
            note=f"not fitted: {len(names)} coefficient(s) from {len(usable)} configuration(s) leaves {dof} degrees "
            "of freedom, so any fit is exact by construction and says nothing; add configurations that vary "
            "one mechanism at a time",
        )
    if rank < len(names):
        return OverheadFit(
            **common,
            note=f"not fitted: the mechanisms {', '.join(names)} never vary apart in these configurations, so their "
            "shares cannot be told apart; add a configuration that uses one without the other",
        )
    coef, *_ = np.linalg.lstsq(a, b, rcond=None)
    pred = a @ coef
    ss_res = float(((b - pred) ** 2).sum())
    ss_tot = float(((b - b.mean()) ** 2).sum())
    if ss_tot <= 1e-12 * max(float((b**2).sum()), 1e-300):  # every configuration costs the same: R² undefined
        r2 = None
    else:
        r2 = 1.0 - ss_res / ss_tot
    return OverheadFit(
        **common,
        coefficients=dict(zip(names, coef.tolist(), strict=True)),
        r2=r2,
        residuals={r.config: float(e) for r, e in zip(usable, b - pred, strict=True)},
        warning=f"poor fit (R² {r2:.2f} < {POOR_FIT}): these mechanisms do not explain this cost; read the "
        "coefficients as rough at best"
        if r2 is not None and r2 < POOR_FIT
        else None,
    )
