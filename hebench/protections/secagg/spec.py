"""secagg: SecAgg+ pairwise masking with dropout recovery (the aggregator learns only the sum); what each
adversary obtains in each variant (``params.model``: active, the default, or honest-but-curious), each rule earned by
a red-team test that runs the lying party against live clients, and the real rounds hebench attacks it through."""

from __future__ import annotations

from hebench.protections.secagg.params import SecAggParams
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import K_ALL_OTHERS, Adversary, Conduit, ConduitRule, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

RED_TEAM = "tests/protections/secagg/test_red_team.py"
AGGREGATOR_SUM = f"{RED_TEAM}::test_red_team_secagg_aggregator_obtains_the_survivors_sum"
COLLUDERS = f"{RED_TEAM}::test_red_team_secagg_colluding_clients_subtract_their_updates"
ALL_OTHERS = f"{RED_TEAM}::test_red_team_secagg_colluding_clients_all_others_read_the_victim"
TRAP_WEIGHTS = f"{RED_TEAM}::test_red_team_secagg_malicious_aggregator_trap_weights"
IN_THE_CLEAR = f"{RED_TEAM}::test_red_team_secagg_observer_reads_the_sum_in_the_clear"
HBC = "honest_but_curious_"


def _lie(strategy: str, variant: str = "") -> str:
    return f"{RED_TEAM}::test_red_team_secagg_{variant}malicious_aggregator_{strategy}"


def _common(members: str) -> tuple[ThreatRule, ...]:
    """The rules both variants share: what the honest-but-curious aggregator, colluders and trap weights obtain."""
    return (
        ThreatRule(Adversary.AGGREGATOR, Obtains.SUM, AGGREGATOR_SUM, f"the unmasked sum of the survivors, {members}"),
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
            ALL_OTHERS,
            "with every other client colluding the sum is the victim's update",
            k_at_least=K_ALL_OTHERS,
        ),
        ThreatRule(
            Adversary.MALICIOUS,
            Obtains.SUM,
            TRAP_WEIGHTS,
            "one trap model to every client (the model check passes): imprint reads images out of the sum",
            strategy=Strategy.TRAP_WEIGHTS,
        ),
        ThreatRule(
            Adversary.MALICIOUS,
            Obtains.NOTHING,
            _lie("replay"),
            "masks are fresh each round and cancel only in the sum as sent: an upload counted twice, re-ordered or "
            "replayed from an earlier round unmasks to noise (the honest round gives it the sum, no more)",
            strategy=Strategy.REPLAY,
        ),
        in_the_clear(
            Obtains.SUM,
            IN_THE_CLEAR,
            "masked uploads and sealed shares are useless to it; the unmasked FedAvg goes back to every client "
            "in the clear",
        ),
        UNDER_TLS,
    )


# params.model: active (the default): signed members, a derived ring, a consistency round (Bonawitz et al. 2017)
ACTIVE = (
    *_common("at least params.min_members of them: t, and more than half of the round"),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        _lie("model_inconsistency"),
        "non-victims get a model whose update is zero, so the sum is the victim's (Pasquini et al., CCS 2022); "
        "params.model_check detects it: every client with a neighbour on another model refuses, and the ring "
        "derived from the signed members cannot be cut around the victim",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.SUM,
        _lie("dropout_lie"),
        "a client reveals shares only with more than half of the round's signatures on the survivor set it was "
        "told: two different sets never both gather them, so the clients told another refuse, and at most the "
        "one set signed by more than half unmasks (a sum; each client's seed or mask key, never both)",
        strategy=Strategy.DROPOUT_LIE,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        _lie("withhold_neighbours"),
        "clients derive their neighbours from the signed member list, refuse fewer than params.min_members "
        "members and upload only with t - 1 neighbours' shares",
        strategy=Strategy.WITHHOLD_NEIGHBOURS,
        refused=True,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        _lie("forge_neighbours"),
        "a member whose keys its roster key did not sign is refused before any share leaves a client",
        strategy=Strategy.FORGE_NEIGHBOURS,
        refused=True,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.SUM,
        _lie("split_graph"),
        "clients told different member lists refuse each other's shares; a part of half the round or fewer "
        "gathers no quorum and reveals nothing; a part that unmasks is a sum of more than half a round's clients",
        strategy=Strategy.SPLIT_GRAPH,
    ),
)

# params.model: honest-but-curious (SecAgg+ as Flower's): lists and survivor sets taken on the aggregator's word
HONEST_BUT_CURIOUS = (
    *_common("at least t of them"),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        _lie("model_inconsistency", HBC),
        "non-victims get a model whose update is zero, so the sum is the victim's (Pasquini et al., CCS 2022); "
        "params.model_check detects it on the honest ring, not beside an empty neighbour list or a split graph",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        _lie("dropout_lie", HBC),
        "told the victim survived, its holders reveal its seed's shares; told its neighbours dropped, their "
        "holders reveal their mask keys' (issue #36, N2)",
        strategy=Strategy.DROPOUT_LIE,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        _lie("withhold_neighbours", HBC),
        "given no neighbours, the victim masks with its self mask alone and hands its seed over as a 1-of-1 share (N1)",
        strategy=Strategy.WITHHOLD_NEIGHBOURS,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        _lie("forge_neighbours", HBC),
        "neighbours whose keys the aggregator made open the victim's shares of both its secrets",
        strategy=Strategy.FORGE_NEIGHBOURS,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.VICTIM,
        _lie("split_graph", HBC),
        "the victim in a part of clients holding a dead model: the model check sees the same model everywhere (N3)",
        strategy=Strategy.SPLIT_GRAPH,
    ),
)

THREATS = ACTIVE

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
    variant_threats=(("active", ACTIVE), ("honest-but-curious", HONEST_BUT_CURIOUS)),
    survives_dropout=True,  # through its own protocol: the survivors' masks are recovered
    survives_client_loss=True,
    conduits=CONDUITS,
    chart_marker="P",
)
