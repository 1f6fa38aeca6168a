"""An overhead model in the manner of the confidential-FL papers, shown only where the data supports it.

Each configuration's cost is written as the raw baseline times (1 + Σ coefficient ×
mechanism): per-adapter encrypted fraction, offload, per-layer packing. Coefficients
are signed (a negative one is a saving, e.g. offload's host CPU) and fitted by least
squares. A cost is fitted only over the mechanisms that can change it: offload uploads
exactly what host-side HE does, so it has no upload-bytes term.

A model is shown only when it can be checked and passes: at least MIN_DOF degrees of
freedom (configurations − coefficients), R² at least POOR_FIT, and every configuration
predicted within MAX_MISS of its measured ×raw. Otherwise a note says why, with what the
best fit would have predicted, so a misfit (e.g. selective encryption, whose cost is not
linear in the fraction encrypted) is visible rather than averaged away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hebench.analysis.summary import SummaryRow

POOR_FIT = 0.5  # R² below this: the mechanisms do not explain the cost
MIN_DOF = 2  # fewer degrees of freedom: R² says little, a fit is not shown
MAX_MISS = 0.2  # a configuration predicted further than this share off its measured ×raw: not shown
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
    residuals: Mapping[str, float] = field(default_factory=dict)  # measured − predicted, in ×raw
    predicted: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # config -> (measured, predicted) ×raw
    note: str | None = None  # why there are no coefficients
    warning: str | None = None  # kept for older callers: a shown fit is never poor now

    @property
    def shown(self) -> bool:
        return self.coefficients is not None


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
    checked = {
        **common,
        "r2": r2,
        "residuals": {r.config: float(e) for r, e in zip(usable, b - pred, strict=True)},
        "predicted": {r.config: (float(m + 1), float(p + 1)) for r, m, p in zip(usable, b, pred, strict=True)},
    }
    miss = {c: abs(p - m) / m for c, (m, p) in checked["predicted"].items() if m > 0}
    worst = max(miss, key=lambda c: miss[c], default=None)
    if dof < MIN_DOF:
        why = (
            f"not shown: {len(names)} coefficient(s) from {len(usable)} configuration(s) leaves {dof} degree of "
            f"freedom, too few to check the model (it needs {MIN_DOF}); add configurations that vary one "
            "mechanism at a time"
        )
    elif r2 is not None and r2 < POOR_FIT:
        why = f"not shown: poor fit (R² {r2:.2f} < {POOR_FIT}): these mechanisms do not explain this cost"
    elif worst is not None and miss[worst] > MAX_MISS:
        m, p = checked["predicted"][worst]
        why = (
            f"not shown: the best fit predicts {p:.3g}× raw for {worst} where {m:.3g}× was measured "
            f"({100 * miss[worst]:.0f} % off; at most {100 * MAX_MISS:.0f} % allowed): this cost is not linear in "
            "these mechanisms"
        )
    else:
        return OverheadFit(**checked, coefficients=dict(zip(names, coef.tolist(), strict=True)))
    return OverheadFit(**checked, note=why)
