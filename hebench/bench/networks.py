"""Round time on real links: the transfer model against emulated runs, and how each protection's verdict shifts.

Per profile, one run in which each protection runs on the model backend (parties on loopback, every frame
recorded, ``modelled_round`` records) and right after on each emulated backend (``userspace``; ``kernel``
where asked and it runs), so both see the same machine load; the emulated steady rounds are set against the
modelled ones. Goal: within 10 % for every mode. The verdict shift is each protection's round time over
raw's, on loopback and on each profile, measured in the same runs.
"""

from __future__ import annotations

import copy
import statistics
import tempfile
from pathlib import Path
from typing import Any

from hebench.bench.registry import Option, study, words
from hebench.config import parse_suite
from hebench.results import read_records
from hebench.results.records import ConfigurationRecord, ModelledRoundRecord, PartyRoundRecord, Record
from hebench.runtime.runner import Runner

PROFILES = ("lte", "home-broadband", "datacenter")
SERVER = {"profile": "datacenter"}

# networks.yaml's protections, on digits with the MLP so that every profile runs in minutes (the FEMNIST suite
# itself: --suite suites/networks.yaml)
SUITE: dict[str, Any] = {
    "name": "bench-networks",
    "seed": 0,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 16},
    "training": {"rounds": 3, "lr": 0.1},
    "configurations": [
        {"mode": "raw"},
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        {
            "name": "host-he/compact-bfv-16",
            "mode": "host-he",
            "adapter": "seal-bfv",
            "params": {"bits": 16, "clip": 2.0, "max_summands": 2048},
        },
        {"name": "secagg", "mode": "secagg", "params": {"num_shares": 3, "reconstruction_threshold": 2}},
        {"mode": "offload", "adapter": "tenseal-ckks"},
    ],
    "measure": {"timeout_s": 3600},
}


def _interleaved(suite: dict[str, Any], profile: str, backends: tuple[str, ...]) -> dict[str, Any]:
    """The suite with each protection run on the model backend and then on each emulated backend, one after
    another, so the model's loopback rounds and the emulated ones see the same machine load."""
    raw = copy.deepcopy(suite)
    raw["network"] = {"clients": {"profile": profile}, "server": SERVER}
    configs = []
    for config in suite["configurations"]:
        base = parse_suite({**raw, "configurations": [config]}).configurations[0].label
        for backend in ("model", *backends):
            configs.append({**config, "name": f"{base}|{backend}", "network": {"emulation": backend}})
    raw["configurations"] = configs
    return raw


def _steady(walls: dict[int, float]) -> float | None:
    steady = [w for r, w in walls.items() if r >= 1] or list(walls.values())
    return statistics.fmean(steady) if steady else None


def _walls(records: list[Record]) -> dict[str, dict[str, float | None]]:
    """Configuration -> loopback / measured / modelled steady round wall."""
    measured: dict[str, dict[int, float]] = {}
    modelled: dict[str, dict[int, float]] = {}
    for rec in records:
        if isinstance(rec, PartyRoundRecord) and rec.role == "aggregator" and rec.round_wall_s is not None:
            measured.setdefault(rec.config, {})[rec.round] = rec.round_wall_s
        elif isinstance(rec, ModelledRoundRecord):
            modelled.setdefault(rec.config, {})[rec.round] = rec.round_wall_s
    return {
        label: {"measured": _steady(measured.get(label, {})), "modelled": _steady(modelled.get(label, {}))}
        for label in {*measured, *modelled}
    }


@study(
    "networks",
    options=(Option("--network-profiles", "profiles", "link profiles (default lte,home-broadband,datacenter)", words),),
)
def networks(
    profiles: tuple[str, ...] = PROFILES,
    suite: dict[str, Any] | None = None,
    backends: tuple[str, ...] = ("userspace",),
    out: Path | None = None,
) -> dict[str, Any]:
    """Modelled against emulated round times per mode and link profile, and each protection's round time over raw's."""
    suite = suite or SUITE
    with tempfile.TemporaryDirectory() as tmp:
        root = out or Path(tmp)
        for profile in profiles:
            Runner(parse_suite(_interleaved(suite, profile, backends)), root / profile).run()
        return compare(root, profiles, backends)


def compare(root: Path, profiles: tuple[str, ...], backends: tuple[str, ...]) -> dict[str, Any]:
    """The benchmark's figures from its runs under ``root`` (one folder per profile)."""
    rows: list[dict[str, Any]] = []
    shift: dict[str, dict[str, float | None]] = {}
    for profile in profiles:
        records = read_records(root / profile / "results.jsonl").records
        walls = _walls(records)
        order = [r.config for r in records if isinstance(r, ConfigurationRecord)]
        protections = list(dict.fromkeys(label.split("|")[0] for label in order))  # suite order: raw first
        loopback = {p: walls.get(f"{p}|model", {}).get("measured") for p in protections}
        model = {p: walls.get(f"{p}|model", {}).get("modelled") for p in protections}
        shift[f"loopback (before {profile})"] = _ratios(loopback, protections)
        shift[f"{profile} (model)"] = _ratios(model, protections)
        for backend in backends:
            emulated = {p: walls.get(f"{p}|{backend}", {}).get("measured") for p in protections}
            shift[f"{profile} ({backend})"] = _ratios(emulated, protections)
            for p in protections:
                got, want = emulated[p], model[p]
                rows.append(
                    {
                        "profile": profile,
                        "backend": backend,
                        "config": p,
                        "loopback_round_s": loopback[p],
                        "emulated_round_s": got,
                        "modelled_round_s": want,
                        "emulated_over_model": None if not got or not want else got / want,
                    }
                )
    checked = [r["emulated_over_model"] for r in rows if r["emulated_over_model"] is not None]
    return {
        "benchmark": "networks",
        "profiles": list(profiles),
        "server": SERVER,
        "goal": "emulated within 10 % of the model, every mode and profile (steady rounds)",
        "rows": rows,
        "meets_goal": bool(checked) and all(abs(x - 1) <= 0.10 for x in checked),
        "verdict_shift": {"round_time_over_raw": shift},
    }


def _ratios(walls: dict[str, float | None], labels: list[str]) -> dict[str, float | None]:
    raw = walls.get(labels[0])
    return {label: None if not raw or walls.get(label) is None else walls[label] / raw for label in labels}  # type: ignore[operator]


if __name__ == "__main__":
    import json
    import sys

    chosen = tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else PROFILES
    print(json.dumps(networks(chosen), indent=2))
