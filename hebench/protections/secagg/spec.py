"""secagg: SecAgg+ pairwise masking with dropout recovery (the aggregator learns only the sum); what each
adversary obtains, and the real rounds hebench attacks it through."""

from __future__ import annotations

from hebench.protections.secagg.params import SecAggParams
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import K_ALL_OTHERS, Adversary, Conduit, ConduitRule, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

THREATS_TESTS = "tests/protections/secagg/test_secagg_threats.py"
INCONSISTENCY = f"{THREATS_TESTS}::test_model_inconsistency_isolates_the_victim_in_the_real_sum"
COLLUDERS = f"{THREATS_TESTS}::test_colluders_subtract_their_updates_from_the_real_secagg_sum"
DROPOUT_LIE = f"{THREATS_TESTS}::test_lying_about_survivors_to_different_neighbours_unmasks_nothing"
SUM_ONLY = (
    "tests/protections/test_protection_modes.py::test_the_attacker_of_secagg_sees_the_rounds_sum_and_of_sharing_nothing"
)
IMPRINT_SUM = (
    "tests/inversion/test_imprint.py::test_imprint_reads_the_update_after_local_steps_and_the_fedavg_aggregate"
)

THREATS = (
    ThreatRule(Adversary.AGGREGATOR, Obtains.SUM, SUM_ONLY, "the unmasked sum of the round's survivors"),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.SUM,
        COLLUDERS,
        "the colluders subtract their own updates from the sum",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        COLLUDERS,
        "with every other client colluding the sum is the victim's update",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        INCONSISTENCY,
        "non-victims get a model whose update is zero, so the sum is the victim's (Pasquini et al., CCS 2022); "
        "params.model_check detects it",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.SUM,
        IMPRINT_SUM,
        "trap weights read images out of the sum",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        DROPOUT_LIE,
        "a client refuses contradicting unmask requests, and t > shares/2 leaves a split lie short of shares",
        strategy=Strategy.DROPOUT_LIE,
        refused=True,
    ),
    in_the_clear(
        Obtains.SUM,
        "hebench/protections/secagg/server.py::secagg_round",
        "masked uploads and sealed shares are useless to it; the unmasked FedAvg goes back to every client "
        "in the clear",
    ),
    UNDER_TLS,
)

CONDUITS = (
    # a real round; colluding clients subtract their own updates
    ConduitRule(Conduit.SECAGG, (Adversary.AGGREGATOR, Adversary.COLLUDING_CLIENTS)),
    # a real round where the non-victims hold a dead model (model_check may abort it)
    ConduitRule(Conduit.SECAGG_INCONSISTENCY, strategy=Strategy.MODEL_INCONSISTENCY),
)

SPEC = ModeSpec(
    name="secagg",
    summary="SecAgg+ pairwise masking with dropout recovery: the aggregator learns only the sum",
    key_holders=KeyHolders.NONE,  # no HE keys: clients agree pairwise mask keys among themselves
    attacker_view=AttackerView.SUM,
    plain_adapter=True,
    packings=("flat",),
    selective=False,
    local_link="hebench.protections.secagg.link:secagg_link",
    flower_cipher=None,  # see docs/protections.md: Flower's SecAggPlusWorkflow does not fit hebench's Flower runtime
    aggregation="hebench.protections.secagg.server:secagg_round",
    params_model=SecAggParams,
    threats=THREATS,
    survives_dropout=True,  # through its own protocol: the survivors' masks are recovered
    survives_client_loss=True,
    conduits=CONDUITS,
    chart_marker="P",
)
