"""What TLS changes in every mode's threat rules: the network observer's view.

The mutual-TLS channels themselves live in :mod:`hebench.net` (certificates, doors); a configuration turns them on
with ``transport: tls``. Under TLS the observer reads TLS records only, whatever the mode; without it, each mode
says what crosses its wire in the clear (its own ``observer`` rule, usually :func:`in_the_clear`). The red team's
observer is :mod:`hebench.protections.tls.adversary` (its taps: :mod:`hebench.protections.tls.tap`).
"""

from __future__ import annotations

from hebench.protections.threats import Adversary, Obtains, ThreatRule

TLS_TAP = "tests/protections/tls/test_red_team.py::test_red_team_tls_observer_reads_only_tls_records"
# a frame read off a plain TCP channel (the net-level control; a mode's own observer test is its evidence)
TCP_TAP = "tests/net/test_tls_doors.py::test_control_without_tls_the_observer_reads_the_update"

# the observer's red-team view (a mode's conduit rule names it): taps on the victims' channels in a live round
OBSERVER_VIEW = "hebench.protections.tls.adversary:observer_view"

UNDER_TLS = ThreatRule(
    Adversary.OBSERVER, Obtains.NOTHING, TLS_TAP, "under TLS the wire carries TLS records only", tls=True
)


def in_the_clear(obtains: Obtains, evidence: str, note: str) -> ThreatRule:
    """A mode's observer rule without TLS: what crosses its wire readable."""
    return ThreatRule(Adversary.OBSERVER, obtains, evidence, note, tls=False)
