"""Run folders for tests, derived from the recorded ``run-offload`` fixture (3 rounds, 2 clients)."""

from __future__ import annotations

import json
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-offload"


def extended_run(dst: Path, rounds: int, cpu_factor: dict[str, float] | None = None, **suite: object) -> Path:
    """``run-offload`` grown to ``rounds`` rounds (rounds 1–2 repeated), each named configuration's CPU times
    scaled by its factor, suite fields (dotted keys with ``__``) set."""
    lines = [json.loads(line) for line in (RUN / "results.jsonl").read_text().splitlines() if line.strip()]
    out = []
    for rec in lines:
        if rec["kind"] == "run":
            rec["suite"]["training"]["rounds"] = rounds
            for key, value in suite.items():
                node = rec["suite"]
                *parents, leaf = key.split("__")
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = value
            rec["suite_hash"] = f"{hash(json.dumps(rec['suite'], sort_keys=True)) & (2**64 - 1):016x}"
        copies = [rec]
        if rec["kind"] in ("party_round", "round") and rec["round"] >= 1:
            copies = [{**rec, "round": r} for r in range(1, rounds) if (r - 1) % 2 == rec["round"] - 1]
        for c in copies:
            factor = (cpu_factor or {}).get(c.get("config"), 1.0)
            if c["kind"] == "party_round" and factor != 1.0:
                c = {**c, "phases": {k: {**v, "cpu_s": v["cpu_s"] * factor} for k, v in c["phases"].items()}}
            out.append(c)
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "results.jsonl").write_text("".join(json.dumps(c) + "\n" for c in out))
    return dst
