"""raw: plaintext FedAvg, the baseline every cost is compared with; what each adversary obtains there."""

from __future__ import annotations

from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import Adversary, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import TCP_TAP, UNDER_TLS, in_the_clear

PLAINTEXT = "tests/fl/test_runs.py::test_raw_mode_does_send_plaintext"
IMPRINT = "tests/inversion/test_imprint.py::test_imprint_recovers_a_batch_of_four_exactly"

THREATS = (
    ThreatRule(Adversary.AGGREGATOR, Obtains.EVERY_UPDATE, PLAINTEXT, "plaintext"),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.EVERY_UPDATE,
        PLAINTEXT,
        "the aggregator has every update already",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.EVERY_UPDATE,
        PLAINTEXT,
        "every update in plaintext, of whatever model it sent",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.EVERY_UPDATE,
        IMPRINT,
        "trap weights read a batch out of one update",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    in_the_clear(Obtains.EVERY_UPDATE, TCP_TAP, "the update crosses the wire in the clear"),
    UNDER_TLS,
)

SPEC = ModeSpec(
    name="raw",
    summary="plaintext FedAvg: the baseline every cost is compared with",
    key_holders=KeyHolders.NONE,
    attacker_view=AttackerView.FULL_UPDATE,
    plain_adapter=True,
    packings=("flat", "per-layer"),
    selective=False,
    local_link="hebench.fl.link:direct_link",
    flower_cipher="hebench.fl.cipher:plain_cipher",
    threats=THREATS,
    survives_dropout=True,
    survives_client_loss=True,
    chart_marker="o",
)
