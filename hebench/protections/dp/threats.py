"""What differential privacy changes in what an adversary obtains: with ``dp: {level: client}`` every update it
obtains (in any mode, from any rule that hands it one) is the client's update clipped to ``clip`` plus Gaussian noise
N(0, (noise_multiplier·clip)²) per coordinate, from a stream secret to that client: it cannot remove the noise, and
the reconstruction bound of :mod:`hebench.inversion.scoring.dp_bound` applies to it. The rule's evidence is a
red-team test: a lying aggregator reading real clients' noised uploads (``tests/protections/dp/test_red_team.py``).
Spec level: pure data.
"""

from __future__ import annotations

from hebench.protections.threats import Adversary, Obtains, ThreatRule

RED_TEAM = "tests/protections/dp/test_red_team.py"

RULES = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_dp_aggregator_reads_the_clipped_update_and_noise_it_cannot_remove",
        "dp level client: each update it obtains is clipped to clip and noised, N(0, (z·clip)²) per coordinate, "
        "from the client's secret stream: no more (the reconstruction bound of dp_bound applies)",
    ),
)

NOISED = RULES[0]
