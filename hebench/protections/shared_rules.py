"""Threat-rule pieces several modes share: the evidence they cite, the rule pair of a mode without dropout
recovery, the conduit of the HE modes. Each mode's own rules live in its spec module
(``hebench.protections.<mode>.spec``); the observer's rule under TLS, common to every mode, in
:mod:`hebench.protections.tls.spec`.

A rule's ``evidence`` names the test (``path::name``) whose assertion is the claim; ``docs/threats.md`` renders
the rules and ``tests/protections/test_threat_rules.py`` checks that every named test exists.
"""

from __future__ import annotations

from hebench.protections.threats import Adversary, Conduit, ConduitRule, Obtains, Strategy, ThreatRule

KEYS_TAP = "tests/inversion/test_threat_views.py::test_without_tls_an_observer_reads_the_secret_key_set_off_the_wire"
HE_COLLUSION = "tests/inversion/test_threat_views.py::test_a_colluding_client_decrypts_the_victims_real_ciphertext"


def malicious(obtains: Obtains, evidence: str, note: str) -> tuple[ThreatRule, ThreatRule]:
    """The same outcome for model inconsistency and trap weights (a mode without dropout recovery)."""
    return (
        ThreatRule(Adversary.MALICIOUS, obtains, evidence, note, strategy=Strategy.MODEL_INCONSISTENCY),
        ThreatRule(Adversary.MALICIOUS, obtains, evidence, note, strategy=Strategy.TRAP_WEIGHTS),
    )


# an adversary that holds (or read) the epoch's secret set decrypts the victim's real ciphertext (the HE modes)
KEY_READERS = (Adversary.COLLUDING_CLIENTS, Adversary.KEY_HOLDER, Adversary.OBSERVER)
HE_KEY = ConduitRule(Conduit.HE_KEY, KEY_READERS, Obtains.EVERY_UPDATE)
