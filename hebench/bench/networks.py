"""Round time on real links: the transfer model against emulated runs, and how each protection's verdict shifts.

One loopback run (``emulation: model``: parties on loopback, every frame recorded) gives each mode's rounds;
the model turns them into round times on each profile. Then each profile is emulated (``userspace``, and
``kernel`` where it runs) and its measured round times are set against the model's. Goal: within 10 % for
every mode, steady rounds. The verdict shift is each protection's round time over raw's, on loopback and on
each profile, measured in the same runs.
"""

from __future__ import annotations

import copy
import statistics
import tempfile
from pathlib import Path
from typing import Any

from hebench.links.model import model_round, round_traffic
from hebench.links.plan import plan_network
from hebench.results import read_records
from hebench.results.records import ConfigurationRecord, PartyRoundRecord, Record
from hebench.runtime.runner import Runner
from hebench.suite import NetworkSpec, parse_suite

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


def _run(suite: dict[str, Any], network: dict[str, Any], folder: Path) -> list[Record]:
    raw = copy.deepcopy(suite)
    raw["network"] = network
    for config in raw["configurations"]:
        config.pop("network", None)  # one link for the whole run
    Runner(parse_suite(raw), folder).run()
    return read_records(folder / "results.jsonl").records


def _steady(walls: dict[int, float]) -> float | None:
    steady = [w for r, w in walls.items() if r >= 1] or list(walls.values())
    return statistics.fmean(steady) if steady else None


def _measured(records: list[Record]) -> dict[str, float | None]:
    walls: dict[str, dict[int, float]] = {}
    for rec in records:
        if isinstance(rec, PartyRoundRecord) and rec.role == "aggregator" and rec.round_wall_s is not None:
            walls.setdefault(rec.config, {})[rec.round] = rec.round_wall_s
    return {label: _steady(w) for label, w in walls.items()}


def _labels(records: list[Record]) -> list[str]:
    return [r.config for r in records if isinstance(r, ConfigurationRecord)]


def networks(
    profiles: tuple[str, ...] = PROFILES,
    suite: dict[str, Any] | None = None,
    backends: tuple[str, ...] = ("userspace",),
    out: Path | None = None,
) -> dict[str, Any]:
    """Model vs emulated round times per mode and profile, and each protection's round time over raw's."""
    suite = suite or SUITE
    with tempfile.TemporaryDirectory() as tmp:
        root = out or Path(tmp)
        loopback = _run(
            suite, {"clients": {"profile": profiles[0]}, "server": SERVER, "emulation": "model"}, root / "loopback"
        )
        labels = _labels(loopback)
        clients = int(suite["data"]["clients"])
        rows: list[dict[str, Any]] = []
        shift: dict[str, dict[str, float | None]] = {"loopback": _ratios(_measured(loopback), labels)}
        for profile in profiles:
            spec = NetworkSpec.model_validate({"clients": {"profile": profile}, "server": SERVER})
            plan = plan_network(spec, clients, int(suite.get("seed", 0)))
            modelled: dict[str, float | None] = {}
            for label in labels:
                rounds = {t.round: t.wall_s + model_round(t, plan).transfer_s for t in round_traffic(loopback, label)}
                modelled[label] = _steady(rounds)
            shift[f"{profile} (model)"] = _ratios(modelled, labels)
            for backend in backends:
                network = {"clients": {"profile": profile}, "server": SERVER, "emulation": backend}
                emulated = _measured(_run(suite, network, root / f"{profile}-{backend}"))
                shift[f"{profile} ({backend})"] = _ratios(emulated, labels)
                for label in labels:
                    got, want = emulated.get(label), modelled.get(label)
                    rows.append(
                        {
                            "profile": profile,
                            "backend": backend,
                            "config": label,
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
