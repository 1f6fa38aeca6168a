"""secret-sharing: additive shares on the 64-bit ring to K non-colluding aggregators, clients rebuild the sum;
what each adversary obtains."""

from __future__ import annotations

from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import (
    K_ALL_HOLDERS,
    K_ALL_OTHERS,
    Adversary,
    Conduit,
    ConduitRule,
    Obtains,
    Strategy,
    ThreatRule,
)
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

RED_TEAM = "tests/protections/sharing/test_red_team.py"
AGGREGATOR_SHARE = f"{RED_TEAM}::test_red_team_secret_sharing_aggregator"
FEWER_HOLDERS = (
    f"{RED_TEAM}::test_red_team_secret_sharing_share_holders_fewer_than_all_aggregator_0_impersonates_clients"
)
ALL_HOLDERS = f"{RED_TEAM}::test_red_team_secret_sharing_share_holders_all_K_collude"
ONE_COLLUDER = f"{RED_TEAM}::test_red_team_secret_sharing_colluding_clients_one"
ALL_OTHERS = f"{RED_TEAM}::test_red_team_secret_sharing_colluding_clients_all_others"
INCONSISTENCY = f"{RED_TEAM}::test_red_team_secret_sharing_malicious_aggregator_model_inconsistency"
TRAP_WEIGHTS = f"{RED_TEAM}::test_red_team_secret_sharing_malicious_aggregator_trap_weights"
WIRE = f"{RED_TEAM}::test_red_team_secret_sharing_observer_without_tls"

THREATS = (
    ThreatRule(Adversary.AGGREGATOR, Obtains.NOTHING, AGGREGATOR_SHARE, "one share of each update: uniform words"),
    ThreatRule(
        Adversary.SHARE_HOLDERS,
        Obtains.NOTHING,
        FEWER_HOLDERS,
        "fewer than all K shares are uniform; a holder knows a client by its own key (or certificate), so aggregator "
        "0 cannot take client slots at a holder",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.SHARE_HOLDERS,
        Obtains.EVERY_UPDATE,
        ALL_HOLDERS,
        "all K shares add up to each update",
        k_at_least=K_ALL_HOLDERS,
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.SUM,
        ONE_COLLUDER,
        "clients rebuild the round's sum from the holders' sums; a coordinator that hands clients different sums "
        "(a dead model for all but a victim) is caught by the holders before the next round is summed",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        ALL_OTHERS,
        "the rebuilt sum minus every other client's update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        INCONSISTENCY,
        "the coordinator holds one share of anything; different sums to different clients are caught by the holders",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        TRAP_WEIGHTS,
        "it may move every client's model (trap weights), but it reads one share of each next update: uniform words",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        WIRE,
        "without TLS all K shares of each update cross the wire: their sum is the update",
    ),
    UNDER_TLS,
)

SPEC = ModeSpec(
    name="secret-sharing",
    summary="additive shares on the 64-bit ring to K non-colluding aggregators; clients rebuild the sum",
    key_holders=KeyHolders.NONE,
    attacker_view=AttackerView.SHARES,
    plain_adapter=True,
    packings=("flat",),
    selective=False,
    local_link="hebench.protections.sharing.link:share_link",
    flower_cipher=None,
    aggregation="hebench.protections.sharing.holder:sum_first_shares",
    params_model=SecretSharingParams,
    helper_party="hebench.protections.sharing.holder:run_share_holder",
    threats=THREATS,
    survives_dropout=True,  # a leaving client tells every share holder
    survives_client_loss=True,
    # k colluding holders add their shares of the victim's upload
    conduits=(ConduitRule(Conduit.SHARES, (Adversary.SHARE_HOLDERS,), Obtains.EVERY_UPDATE),),
    chart_marker="X",
)
