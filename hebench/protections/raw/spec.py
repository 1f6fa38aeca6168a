"""raw: plaintext FedAvg, the baseline every cost is compared with; what each adversary obtains there."""

from __future__ import annotations

from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import Adversary, Conduit, ConduitRule, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import OBSERVER_VIEW, UNDER_TLS, in_the_clear

RED_TEAM = "tests/protections/raw/test_red_team.py"
RED_TEAM_VIEW = "hebench.protections.raw.adversary:red_team_view"

THREATS = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_raw_aggregator_reads_every_update",
        "plaintext: each upload read apart, exactly",
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_raw_colluding_clients_read_every_update",
        "the aggregator has every update already",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_raw_malicious_aggregator_model_inconsistency_reads_every_update",
        "every update in plaintext, of whatever model it handed each client",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_raw_malicious_aggregator_trap_weights_reads_the_batch",
        "every update of the trap model it handed out; the imprint reads a batch out of one",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_raw_observer_without_tls_reads_every_update",
        "the update crosses the wire in the clear",
    ),
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
    # every adversary's view from a live round with its own party in it (the lying aggregator, the observer's taps)
    conduits=(
        ConduitRule(Conduit.RED_TEAM, (Adversary.OBSERVER,), view=OBSERVER_VIEW),
        ConduitRule(Conduit.RED_TEAM, view=RED_TEAM_VIEW),
    ),
    survives_dropout=True,
    survives_client_loss=True,
    chart_marker="o",
)
