"""Client-level DP's ε: each released update is one Gaussian mechanism, composed over the rounds a client uploads.

A client clips its update to L2 norm ``clip`` and adds N(0, (noise_multiplier·clip)²) per coordinate itself
(:func:`~hebench.protections.dp.mechanism.privatize_update`), so each upload is the Gaussian mechanism with
sensitivity ``clip`` under add/remove adjacency of the client's whole data (its update in or out; replacing
one client's data by another's doubles the sensitivity, i.e. halves the noise multiplier). No amplification by
sampling is claimed: the aggregator, the adversary here, knows which clients uploaded. The rounds compose
under Opacus' RDP (or PRV) accountant at sampling rate 1, giving ε at ``delta`` after every round.
"""

from __future__ import annotations

import warnings
from typing import Any

from hebench.protections.dp.ledger import Charge
from hebench.protections.dp.mechanism import _opacus
from hebench.protections.dp.spec import DPSpec


class ClientLevelAccount:
    """One client's client-level privacy spent: one Gaussian mechanism per released update."""

    def __init__(self, spec: DPSpec) -> None:
        self.spec = spec
        self.accountant = _opacus().accountants.create_accountant(spec.accountant)
        self.releases = 0

    def charge(self, round_index: int) -> Charge:
        """The charge of one released update (one step at sampling rate 1)."""
        return Charge(round_index, 1, 1.0, self.spec.noise_multiplier)

    def account(self, steps: int, sample_rate: float | None = None, noise_multiplier: float | None = None) -> None:
        z = self.spec.noise_multiplier if noise_multiplier is None else noise_multiplier
        for _ in range(steps):
            self.accountant.step(noise_multiplier=z, sample_rate=1.0 if sample_rate is None else sample_rate)
        self.releases += steps

    def epsilon(self) -> float | None:
        """ε at the spec's δ (None without noise or before any release: no finite guarantee to state)."""
        if self.spec.noise_multiplier == 0 or self.releases == 0:
            return None
        with warnings.catch_warnings():
            # tiny noise puts RDP's best order at the smallest one tried: the ε stated is still an upper bound (a
            # loose one, for a guarantee that is meaningless anyway), so no warning on every client's stderr
            warnings.filterwarnings("ignore", message="Optimal order is the smallest alpha")
            return float(self.accountant.get_epsilon(delta=self.spec.delta))

    def report(self) -> dict[str, Any]:
        epsilon = self.epsilon()
        return {
            "dp_accountant": self.spec.accountant,
            "dp_sample_rate": 1.0,
            "dp_steps": self.releases,  # updates released so far
            "dp_delta": self.spec.delta,
            **({} if epsilon is None else {"dp_epsilon": epsilon}),
        }
