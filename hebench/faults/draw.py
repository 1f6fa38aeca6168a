"""Each client's fault in a round: a pure function of (fault seed, round, client) and the faults' figures.

The draw never depends on the mode, the runtime, the hosting or the order clients are asked in, so a
suite's configurations (and the local, pool and Flower runtimes) see the same clients fail at the same
points. Dropout and slowness are drawn independently; a straggler that also drops out leaves as drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hebench.config.faults import PHASES, FaultsSpec

_TAG = 0x0FA17  # keeps the fault stream apart from every other use of the seed


@dataclass(frozen=True)
class Fault:
    """What happens to one client in one round: the phase it leaves at (None: it stays), its compute slowdown."""

    dropout_phase: str | None = None
    slowdown: float = 1.0

    @property
    def drops(self) -> bool:
        return self.dropout_phase is not None


NO_FAULT = Fault()


def fault_for(spec: FaultsSpec, round_index: int, client: int) -> Fault:
    """``client``'s fault in ``round_index`` under ``spec`` (resolved: every key set)."""
    if spec.seed is None or spec.dropout is None or spec.stragglers is None:
        raise ValueError("fault_for needs a resolved FaultsSpec (FaultsSpec.resolved)")
    rng = np.random.default_rng([_TAG, spec.seed, round_index, client])
    leave, which, slow = rng.random(3)
    phase = None
    if leave < spec.dropout:
        wanted = spec.dropout_phase or "random"
        phase = PHASES[min(int(which * len(PHASES)), len(PHASES) - 1)] if wanted == "random" else wanted
    slowdown = spec.stragglers.slowdown if slow < spec.stragglers.share else 1.0
    return Fault(phase, slowdown)


def faults_of_round(spec: FaultsSpec, round_index: int, clients: list[int]) -> dict[int, Fault]:
    """The faults of the round's selected clients (those without one left out)."""
    found = {i: fault_for(spec, round_index, i) for i in clients}
    return {i: f for i, f in found.items() if f.drops or f.slowdown != 1.0}
