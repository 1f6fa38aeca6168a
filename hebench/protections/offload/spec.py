"""offload: a separate engine holding the keys encrypts and decrypts, as a SmartNIC/DPU would; what each adversary
obtains."""

from __future__ import annotations

from hebench.protections.shared_rules import HE_KEY
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import Adversary, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

RED_TEAM = "tests/protections/offload/test_red_team.py"
AGGREGATOR_VIEW = f"{RED_TEAM}::test_red_team_offload_aggregator"
ONE_VICTIM_PER_ROUND = f"{RED_TEAM}::test_red_team_offload_colluding_clients_one_victim_per_round"
ENGINE_KEY = f"{RED_TEAM}::test_red_team_offload_key_holder"
INCONSISTENCY = f"{RED_TEAM}::test_red_team_offload_malicious_aggregator_model_inconsistency"
TRAP_WEIGHTS = f"{RED_TEAM}::test_red_team_offload_malicious_aggregator_trap_weights"
WIRE = f"{RED_TEAM}::test_red_team_offload_observer_without_tls"

THREATS = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.NOTHING,
        AGGREGATOR_VIEW,
        "ciphertext under a key only the engines hold; no engine's door opens for any key it holds",
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        ONE_VICTIM_PER_ROUND,
        "an engine cannot tell an aggregate from one upload: the aggregator hands a colluder's engine one victim's "
        "upload as the aggregate, one victim per round (an engine opens one aggregate of the model's length per "
        "round of the run, for its own host, with its key authority's keys only)",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.KEY_HOLDER,
        Obtains.EVERY_UPDATE,
        ENGINE_KEY,
        "every engine holds the epoch's one secret key set: one engine decrypts every upload",
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        INCONSISTENCY,
        "it can hand hosts different aggregates (a dead model for the non-victims), but reads ciphertext only, and "
        "no engine decrypts for it",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        TRAP_WEIGHTS,
        "it can add trap weights to the aggregate (public-key encryption), but reads the next uploads as ciphertext",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        WIRE,
        "without TLS the host streams its plaintext update to its engine in the clear",
    ),
    UNDER_TLS,
)

SPEC = ModeSpec(
    name="offload",
    summary="a separate engine holding the keys encrypts and decrypts, as a SmartNIC/DPU would",
    key_holders=KeyHolders.ENGINES,
    attacker_view=AttackerView.NOTHING,
    plain_adapter=False,
    packings=("flat",),  # engines stream the flat update in chunks
    selective=True,
    local_link="hebench.protections.offload.link:engine_link",
    flower_cipher="hebench.runtime.flower.ciphers:node_engine_cipher",
    threats=THREATS,
    survives_dropout=True,
    survives_client_loss=True,
    conduits=(HE_KEY,),
    chart_marker="^",
)
