"""The benchmark suite behind ``nox -s bench``: writes JSON under ``reports/bench/``.

Speed goals are checked here as ratios measured in the same run, never in tests.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hebench.crypto.registry import status
from hebench.heops.compare import DEFAULT_ADAPTERS, DEFAULT_SIZES, compare
from hebench.measure.environment import capture


def paillier_packing(
    key_bits: tuple[int, ...] = (2048, 3072), size: int = 4096, budget_s: float = 10.0
) -> dict[str, Any]:
    """Packed vs one-value-per-ciphertext Paillier at the same key size (goal: >= 50x per value)."""
    rows = []
    for bits in key_bits:
        records = {
            packing: compare(
                ["paillier"], [size], {"paillier": {"key_bits": bits, "packing": packing}}, budget_s=budget_s
            )[0]
            for packing in ("batch", "none")
        }
        per_value = {k: r["operations"]["encrypt"]["wall_s_per_value"] for k, r in records.items()}
        speedup = per_value["none"] / per_value["batch"]
        rows.append(
            {
                "key_bits": bits,
                "slots": records["batch"]["info"]["slots"],
                "encrypt_s_per_value": per_value,
                "speedup": speedup,
                "goal": 50.0,
                "meets_goal": speedup >= 50.0,
            }
        )
    return {"benchmark": "paillier_packing", "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument(
        "--only",
        default="libraries,paillier_packing,fl_round,offload_round,flower_round,flower_memory,compact_round,compact_accuracy,scale,attack_restart,attack_strength,main_command,protections_scale,startup,dp_noise,shaper_fidelity,networks,bigmodels,threat_defences,dropouts,secaggplus_flower",
        help="benchmarks to run (flower_round and flower_memory need hebench[flower])",
    )
    parser.add_argument("--scale-clients", default="8,32,128,256", help="client counts of the scale benchmark")
    parser.add_argument("--compact-rounds", type=int, default=20, help="rounds of the compact accuracy runs")
    parser.add_argument(
        "--attack-strength-full", action="store_true", help="attack_strength at breaching's 24,000 IG steps (hours)"
    )
    parser.add_argument("--with-paillier", action="store_true", help="include Paillier in the FL round (minutes)")
    parser.add_argument(
        "--fidelity-sizes", default="64000,1000000,4000000,16000000,64000000", help="shaper_fidelity: bytes (to 256e6)"
    )
    parser.add_argument("--fidelity-rate", type=float, default=100.0, help="shaper_fidelity: link rate in Mbit/s")
    parser.add_argument("--network-profiles", default="lte,home-broadband,datacenter", help="networks: profiles")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = capture()
    adapters = [a for a in DEFAULT_ADAPTERS if status(a).available]
    sizes = [int(s) for s in args.sizes.split(",")]
    only = set(args.only.split(","))
    if "libraries" in only:
        libs = compare(adapters, sizes, budget_s=args.budget)
        (args.out / "libraries.json").write_text(json.dumps({"environment": env, "results": libs}, indent=2))
    if "paillier_packing" in only:
        packing = paillier_packing()
        (args.out / "paillier_packing.json").write_text(json.dumps({"environment": env, **packing}, indent=2))
    if "fl_round" in only:
        from hebench.bench.fl_round import fl_round

        result = fl_round(with_paillier=args.with_paillier)
        (args.out / "fl_round.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "offload_round" in only:
        from hebench.bench.offload_round import offload_round

        result = offload_round()
        (args.out / "offload_round.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "compact_round" in only:
        from hebench.bench.compact import compact_round

        result = compact_round()
        (args.out / "compact_round.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "compact_accuracy" in only:
        from hebench.bench.compact import compact_accuracy

        result = compact_accuracy(args.compact_rounds)
        (args.out / "compact_accuracy.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "attack_restart" in only:
        from hebench.bench.attack_restart import attack_restart

        result = attack_restart()
        (args.out / "attack_restart.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "attack_strength" in only:
        from hebench.bench.attack_strength import attack_strength

        result = attack_strength(full=args.attack_strength_full)
        (args.out / "attack_strength.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "main_command" in only:
        from hebench.bench.main_command import main_command

        result = main_command()
        (args.out / "main_command.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "flower_round" in only:
        from hebench.bench.flower_round import flower_round
        from hebench.runtime.flower import require_flower

        require_flower()
        result = flower_round()
        (args.out / "flower_round.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "flower_memory" in only:
        from hebench.bench.flower_memory import flower_memory
        from hebench.runtime.flower import require_flower

        require_flower()
        result = flower_memory()
        (args.out / "flower_memory.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "protections_scale" in only:
        from hebench.bench.protections_scale import protections_scale

        result = protections_scale()
        (args.out / "protections_scale.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "threat_defences" in only:
        from hebench.bench.threat_defences import threat_defences

        result = threat_defences()
        (args.out / "threat_defences.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "startup" in only:
        from hebench.bench.startup import startup

        result = startup()
        (args.out / "startup.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "dp_noise" in only:
        from hebench.bench.dp_noise import dp_noise

        result = dp_noise()
        (args.out / "dp_noise.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "shaper_fidelity" in only:
        from hebench.bench.shaper_fidelity import shaper_fidelity

        sizes = tuple(int(s) for s in args.fidelity_sizes.split(","))
        result = shaper_fidelity(sizes, args.fidelity_rate)
        (args.out / "shaper_fidelity.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "networks" in only:
        from hebench.bench.networks import networks

        result = networks(tuple(args.network_profiles.split(",")))
        (args.out / "networks.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "bigmodels" in only:
        from hebench.bench.bigmodels import bigmodels

        result = bigmodels()
        (args.out / "bigmodels.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "dropouts" in only:
        from hebench.bench.dropouts import dropouts

        result = dropouts()
        (args.out / "dropouts.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "secaggplus_flower" in only:
        from hebench.bench.secaggplus_flower import secaggplus_flower

        result = secaggplus_flower()
        (args.out / "secaggplus_flower.json").write_text(json.dumps({"environment": env, **result}, indent=2))
    if "scale" in only:
        from hebench.bench.scale import scale

        result = scale(tuple(int(n) for n in args.scale_clients.split(",")))
        (args.out / "scale.json").write_text(json.dumps({"environment": env, **result}, indent=2))


if __name__ == "__main__":
    main()
