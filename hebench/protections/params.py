"""Parameters of modes that bring their own (``params:`` of a secagg or secret-sharing configuration).

These modes send no HE ciphertext (their adapter is ``plain``), so ``params`` configure the
protocol, not the adapter. Layer 0: pure data and arithmetic, no protocol code.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Seed entropy of one mask, per generator. flwr 1.41's pseudo_rand_gen XOR-folds the *base64 text* of the shared
# key into a 32-bit seed; base64 characters are ASCII, so no byte of the fold ever sets its top bit: 4 x 7 = 28 bits
# (tests/protections/secagg/test_secagg.py measures it).
SEED_BITS = {"flwr-32bit": 28, "full-key": 128}
FLOWER_QUANTIZATION_MAX = 2**31 - 1  # flwr's quantize() casts to int32: a larger range wraps silently


class ModeParams(BaseModel):
    """Base of a mode's own parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def extra_aggregators(self) -> int:
        """Aggregator processes beside the main one (non-colluding share holders)."""
        return 0

    def security(self, clients: int) -> dict[str, Any] | None:
        """What the configuration record says about this protocol's strength, for ``clients`` per round."""
        return None

    def check_clients(self, clients: int) -> None:
        """Raise ``ValueError`` (problem and fix) if these parameters cannot serve ``clients`` per round."""


class SecAggParams(ModeParams):
    """SecAgg+ (Bell et al. 2020, as Flower's ``SecAggPlusWorkflow``): pairwise masks on a ring of neighbours."""

    num_shares: int = Field(3, ge=2)  # shares of each client's secrets: itself + its neighbours (Flower's meaning)
    reconstruction_threshold: int = Field(2, ge=1)  # shares that rebuild a secret
    clipping_range: float = Field(8.0, gt=0)  # values are clipped to [-c, c] before quantisation
    quantization_range: int = Field(2**22, ge=2)  # quantised values lie in [0, quantization_range]
    modulus: int = Field(2**32, ge=4, le=2**62)  # masked sums are taken modulo this
    prg: Literal["full-key", "flwr-32bit"] = "full-key"  # mask generator: see docs/protections.md
    # each client seals a hash of the global model it holds into its shares for its neighbours; a mismatch
    # (an aggregator that sent clients different models) aborts the round: see docs/threats.md
    model_check: bool = False

    @field_validator("quantization_range")
    @classmethod
    def _flower_represents(cls, value: int) -> int:
        if value > FLOWER_QUANTIZATION_MAX:
            raise ValueError(
                f"quantization_range {value} exceeds 2^31 - 1 = {FLOWER_QUANTIZATION_MAX}: Flower's quantiser casts "
                f"to int32, so larger values wrap and corrupt the sum; set quantization_range to at most "
                f"{FLOWER_QUANTIZATION_MAX} (default 2^22 = 4194304)"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SecAggParams:
        t, shares = self.reconstruction_threshold, self.num_shares
        if t > shares:
            raise ValueError(f"reconstruction_threshold {t} exceeds num_shares {shares}")
        if 2 * t <= shares:
            raise ValueError(
                f"reconstruction_threshold {t} is at most half of num_shares {shares}: an aggregator that tells some "
                f"holders a client survived and the others that it dropped collects {t} shares of both its secrets "
                f"and unmasks its update; set reconstruction_threshold to at least {shares // 2 + 1} (SecAgg+: t > n/2)"
            )
        if self.modulus <= self.quantization_range:
            raise ValueError(f"modulus {self.modulus} must exceed quantization_range {self.quantization_range}")
        return self

    def check_clients(self, clients: int) -> None:
        """The masked sum of ``clients`` quantised updates (each at most quantization_range) must stay below
        the modulus, or it wraps and the unmasked average is garbage."""
        if clients * self.quantization_range >= self.modulus:
            raise ValueError(
                f"secagg: {clients} clients per round x quantization_range {self.quantization_range} reach modulus "
                f"{self.modulus}, so the masked sum would wrap; lower quantization_range to at most "
                f"{(self.modulus - 1) // clients} or raise modulus (up to 2^62)"
            )

    def neighbours(self, clients: int) -> int:
        """Neighbours each client masks with among ``clients`` (a ring of num_shares - 1, or everyone)."""
        half = math.ceil((self.num_shares - 1) / 2)
        return min(clients - 1, 2 * half)

    def security(self, clients: int) -> dict[str, Any]:
        """Brute-force work to strip one client's pairwise masks, in bits: neighbours x seed bits of one mask.

        The self mask is revealed when a survivor is unmasked, so a client's upload is hidden by its
        pairwise masks alone; each comes from one seed of ``SEED_BITS[prg]`` bits (flwr-32bit: 28, see above).
        """
        k = self.neighbours(clients)
        bits = SEED_BITS[self.prg]
        return {
            "protocol": "secagg+",
            "prg": self.prg,
            "mask_seed_bits": bits,
            "neighbours": k,
            "work_factor_bits": k * bits,
            "note": (
                f"each pairwise mask is seeded with {bits} bits; stripping one client's {k} masks takes "
                f"about 2^{k * bits} guesses"
                + (
                    " (flwr 1.41 pseudo_rand_gen XOR-folds the base64 text of the key to a 32-bit seed whose 4 bytes "
                    "never set their top bit: 28 bits of entropy)"
                    if self.prg == "flwr-32bit"
                    else ""
                )
            ),
        }


class SecretSharingParams(ModeParams):
    """Additive n-of-n sharing over the 64-bit ring to ``aggregators`` non-colluding servers (Prio, COPA)."""

    aggregators: int = Field(2, ge=2, le=4)
    bits: int = Field(24, ge=2, le=40)  # quantisation: signed levels 2^(bits-1) - 1
    clip: float = Field(8.0, gt=0)
    # a share holder lost (its process died): "end" the run (its record names the holder), or "skip": record the
    # round as skipped naming the holder and end this configuration only (the suite goes on with the next one); a
    # holder gone for good would fail every later round of the configuration, so none is run in vain
    on_holder_loss: Literal["end", "skip"] = "end"

    @property
    def extra_aggregators(self) -> int:
        return self.aggregators - 1

    def security(self, clients: int) -> dict[str, Any]:
        return {
            "protocol": "additive-sharing",
            "ring_bits": 64,
            "aggregators": self.aggregators,
            "note": (
                f"each share is uniform on the 64-bit ring: one aggregator alone learns nothing; "
                f"all {self.aggregators} colluding recover every update"
            ),
        }

    def max_weight_sum(self) -> int:
        """Largest total of sample counts whose weighted sum stays inside the signed 64-bit ring."""
        return math.floor((2**63 - 1) / (2 ** (self.bits - 1) - 1))
