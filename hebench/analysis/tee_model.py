"""A *modelled* TEE cost row: the confidential-FL papers' linear overhead model applied to measured costs.

Casella et al. model each security mechanism's overhead as a coefficient times the baseline time,
``O_m = C_m × T_baseline`` (TEE execution, TLS, disk encryption), so a protected run takes
``T_baseline × (1 + Σ C_m)``. hebench has no enclave: this module takes a configuration's *measured*
round wall time and CPU as ``T_baseline`` and writes the modelled figures as a separate
``modelled_cost`` record (``modelled: true``, with the coefficients and their source), never mixed with
measured ones. No coefficients are shipped: they are read from a user file (see docs/dp-tls-tee.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from hebench.errors import ParameterError
from hebench.results.records import ModelledCostRecord, PartyRoundRecord, Record

MODEL = "linear overhead: T = T_baseline x (1 + sum of C_m) (Casella et al., confidential FL)"
_FIX = "see docs/dp-tls-tee.md for the coefficients file format"


@dataclass(frozen=True)
class Coefficients:
    """Overhead coefficients per mechanism, where they come from, and what they were fitted on."""

    source: str
    fitted_on: str
    values: dict[str, float]


def load_coefficients(path: str | Path) -> Coefficients:
    """Read a coefficients file: ``source``, ``fitted_on`` and ``mechanisms: {name: coefficient}``."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ParameterError(f"cannot read TEE coefficients file {path}: {err}", _FIX) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("mechanisms"), dict) or not raw.get("source"):
        raise ParameterError(f"{path} needs 'source' and a 'mechanisms' mapping of name: coefficient", _FIX)
    values: dict[str, float] = {}
    for name, value in raw["mechanisms"].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ParameterError(f"{path}: mechanism '{name}' has coefficient {value!r}, not a number >= 0", _FIX)
        values[str(name)] = float(value)
    return Coefficients(str(raw["source"]), str(raw.get("fitted_on", "unstated")), values)


def modelled_costs(
    config: str, records: Iterable[Record], coefficients: Coefficients, mechanisms: tuple[str, ...], file: str
) -> ModelledCostRecord:
    """The modelled row of ``config`` from its measured aggregator round walls and every party's CPU."""
    missing = [m for m in mechanisms if m not in coefficients.values]
    if missing:
        raise ParameterError(
            f"the TEE coefficients file {file} has no coefficient for {', '.join(missing)}",
            f"add them under 'mechanisms', or use one of {', '.join(coefficients.values) or 'none listed'}",
        )
    rounds = [r for r in records if isinstance(r, PartyRoundRecord) and r.config == config]
    wall = sum(r.round_wall_s or 0.0 for r in rounds if r.role == "aggregator")
    cpu = sum(r.phases.cpu_s(exclude=("wait",)) for r in rounds)
    applied = {m: coefficients.values[m] for m in mechanisms}
    factor = 1.0 + sum(applied.values())
    return ModelledCostRecord(
        config=config,
        model=MODEL,
        source=coefficients.source,
        fitted_on=coefficients.fitted_on,
        coefficients_file=file,
        coefficients=applied,
        rounds=len({r.round for r in rounds}),
        baseline_round_wall_s=wall,
        modelled_round_wall_s=wall * factor,
        overhead_wall_s={m: c * wall for m, c in applied.items()},
        baseline_cpu_s=cpu,
        modelled_cpu_s=cpu * factor,
    )
