"""secret-sharing: additive shares on the 64-bit ring to K non-colluding aggregators, clients rebuild the sum;
what each adversary obtains."""

from __future__ import annotations

from hebench.protections.shared_rules import malicious
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import (
    K_ALL_HOLDERS,
    K_ALL_OTHERS,
    Adversary,
    Conduit,
    ConduitRule,
    Obtains,
    ThreatRule,
)
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

SHARING_TESTS = "tests/protections/sharing/test_secret_sharing.py"
UNIFORM_SHARE = f"{SHARING_TESTS}::test_one_aggregators_share_is_uniform_and_never_the_update"
SUM_REBUILT = f"{SHARING_TESTS}::test_sum_of_per_aggregator_sums_equals_the_plain_integer_fedavg_numerator_exactly"
FEWER_HOLDERS = "tests/inversion/test_threat_views.py::test_fewer_than_all_share_holders_see_uniform_words"
ALL_HOLDERS = "tests/inversion/test_threat_views.py::test_all_share_holders_recover_every_update_exactly"
HOLDERS_TAP = "tests/net/test_tls_doors.py::test_control_share_holder_traffic_over_tcp_is_readable"

THREATS = (
    ThreatRule(Adversary.AGGREGATOR, Obtains.NOTHING, UNIFORM_SHARE, "one share of each update: uniform words"),
    ThreatRule(
        Adversary.SHARE_HOLDERS,
        Obtains.NOTHING,
        FEWER_HOLDERS,
        "fewer than all K shares are uniform and independent of the update",
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
        SUM_REBUILT,
        "clients rebuild the round's sum from the holders' sums",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        SUM_REBUILT,
        "the rebuilt sum minus every other client's update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    *malicious(
        Obtains.NOTHING,
        UNIFORM_SHARE,
        "the coordinator never holds more than one share of anything; clients rebuild the sum",
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        HOLDERS_TAP,
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
