"""What TLS changes in every mode's threat rules: the network observer's view.

The mutual-TLS channels themselves live in :mod:`hebench.net` (certificates, doors); a configuration turns them on
with ``transport: tls``. Under TLS the observer reads TLS records only, whatever the mode; without it, each mode
says what crosses its wire in the clear (its own ``observer`` rule, usually :func:`in_the_clear`).
"""

from __future__ import annotations

from hebench.protections.threats import Adversary, Obtains, ThreatRule

TLS_TAP = "tests/net/test_tls_doors.py::test_a_network_observer_sees_no_update_bytes_over_tls"
TCP_TAP = "tests/net/test_tls_doors.py::test_control_without_tls_the_observer_reads_the_update"

UNDER_TLS = ThreatRule(
    Adversary.OBSERVER, Obtains.NOTHING, TLS_TAP, "under TLS the wire carries TLS records only", tls=True
)


def in_the_clear(obtains: Obtains, evidence: str, note: str) -> ThreatRule:
    """A mode's observer rule without TLS: what crosses its wire readable."""
    return ThreatRule(Adversary.OBSERVER, obtains, evidence, note, tls=False)
