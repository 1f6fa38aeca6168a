"""Packed against one-value-per-ciphertext Paillier at the same key size, measured in the same run.

Goal: packing (BatchCrypt-style, several fixed-point values per plaintext) encrypts at least 50x cheaper per
value than ``packing: none``.
"""

from __future__ import annotations

from typing import Any

from hebench.bench.registry import study
from hebench.heops.compare import compare

GOAL = 50.0


@study("paillier_packing")
def paillier_packing(
    key_bits: tuple[int, ...] = (2048, 3072), size: int = 4096, budget_s: float = 10.0
) -> dict[str, Any]:
    """Packed vs one-value-per-ciphertext Paillier encryption per value at 2048 and 3072 bits (goal: >= 50x)."""
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
                "goal": GOAL,
                "meets_goal": speedup >= GOAL,
            }
        )
    return {"benchmark": "paillier_packing", "rows": rows}
