"""SecAgg+'s parameters (``params:`` of a secagg configuration): shares, threshold, quantisation, mask generator.

Spec level: pure data and arithmetic, no protocol code.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from hebench.protections.params import ModeParams

# Seed entropy of one mask, per generator. flwr 1.41's pseudo_rand_gen XOR-folds the *base64 text* of the shared
# key into a 32-bit seed; base64 characters are ASCII, so no byte of the fold ever sets its top bit: 4 x 7 = 28 bits
# (tests/protections/secagg/test_secagg.py measures it).
SEED_BITS = {"flwr-32bit": 28, "full-key": 128}
FLOWER_QUANTIZATION_MAX = 2**31 - 1  # flwr's quantize() casts to int32: a larger range wraps silently


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
    # active: clients sign what they advertise (the trusted set-up's roster), derive their neighbours from the signed
    # member list and reveal shares only after a consistency round (Bonawitz et al. CCS 2017); honest-but-curious:
    # the aggregator hands out neighbour lists and survivor sets that clients take on trust (SecAgg+ as Flower's)
    model: Literal["active", "honest-but-curious"] = "active"

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

    @property
    def variant(self) -> str:
        """Its threat rules' variant (``ModeSpec.variant_threats``): the adversary model the protocol runs in."""
        return self.model

    def quorum(self, population: int) -> int:
        """Active model: the matching survivor-set signatures a client needs before it reveals a share, of a round
        drawn for ``population`` clients: more than half, so two different survivor sets never both gather them."""
        return population // 2 + 1

    def min_members(self, population: int) -> int:
        """The fewest members a round of ``population`` may go on with at any stage: t (no secret is ever shared
        below its threshold), and in the active model the quorum too (fewer could never unmask)."""
        t = self.reconstruction_threshold
        return max(t, self.quorum(population)) if self.model == "active" else t

    def check_clients(self, clients: int) -> None:
        """The masked sum of ``clients`` quantised updates (each at most quantization_range) must stay below
        the modulus, or it wraps and the unmasked average is garbage; and a round needs at least t clients."""
        if clients < self.reconstruction_threshold:
            raise ValueError(
                f"secagg: {clients} clients per round are fewer than reconstruction_threshold "
                f"{self.reconstruction_threshold}, so no round could share its secrets; lower "
                f"reconstruction_threshold (and num_shares) or raise clients_per_round"
            )
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
            "model": self.model,
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
