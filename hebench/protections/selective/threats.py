"""What selective encryption lets through: the plaintext coordinates of every update, to whoever the base mode
otherwise shows nothing (its aggregator, honest or lying about the models it hands out).

:func:`hebench.protections.threats.resolve` turns such an outcome's ``nothing`` into ``visible-coordinates``; these
rules carry its evidence, each a red-team test against hebench's live host-he clients encrypting a mask's
coordinates (``tests/protections/selective/test_red_team.py``). Spec level: pure data.
"""

from __future__ import annotations

from hebench.protections.threats import Adversary, Obtains, ThreatRule

RED_TEAM = "tests/protections/selective/test_red_team.py"

RULES = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.VISIBLE,
        f"{RED_TEAM}::test_red_team_selective_aggregator_reads_the_visible_coordinates_only",
        "the plaintext coordinates of each update, exactly; nothing of the encrypted ones",
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VISIBLE,
        f"{RED_TEAM}::test_red_team_selective_malicious_aggregator_reads_the_visible_coordinates_only",
        "whatever model it hands out, the plaintext coordinates of each update and nothing of the encrypted ones",
    ),
)


def visible_rule(adversary: Adversary) -> ThreatRule | None:
    """The rule behind a selective configuration's ``visible-coordinates`` outcome for ``adversary``."""
    return next((rule for rule in RULES if rule.adversary is adversary), None)
