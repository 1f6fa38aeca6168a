"""decryptor-he: clients encrypt under the public key, a separate decryptor opens only each round's aggregate;
what each adversary obtains."""

from __future__ import annotations

from hebench.protections.shared_rules import HE_KEY
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import Adversary, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

RED_TEAM = "tests/protections/decryptor_he/test_red_team.py"
SEALED = f"{RED_TEAM}::test_red_team_decryptor_he_aggregator"
ONE_VICTIM_PER_ROUND = f"{RED_TEAM}::test_red_team_decryptor_he_colluding_clients_one_victim_per_round"
DECRYPTOR_KEY = f"{RED_TEAM}::test_red_team_decryptor_he_key_holder"
INCONSISTENCY = f"{RED_TEAM}::test_red_team_decryptor_he_malicious_aggregator_model_inconsistency"
TRAP_WEIGHTS = f"{RED_TEAM}::test_red_team_decryptor_he_malicious_aggregator_trap_weights"
WIRE = f"{RED_TEAM}::test_red_team_decryptor_he_observer_without_tls"

THREATS = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.NOTHING,
        SEALED,
        "ciphertext in; the decrypted aggregate comes back sealed to the clients",
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        ONE_VICTIM_PER_ROUND,
        "the decryptor cannot tell an aggregate from one upload: the aggregator hands it one victim's upload and a "
        "colluder opens the sealed answer, one victim per round (it opens one aggregate of the model's length per "
        "round of the run: glued uploads are refused)",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.KEY_HOLDER,
        Obtains.EVERY_UPDATE,
        DECRYPTOR_KEY,
        "the decryptor holds the secret key set: with it the aggregator decrypts every upload",
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        INCONSISTENCY,
        "whatever it sends the decryptor (even one client's ciphertext), the answer is sealed to the clients",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        TRAP_WEIGHTS,
        "trap weights reach the clients' models, but their next uploads reach it as ciphertext only",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        WIRE,
        "without TLS the key authority's secret key set crosses the wire to the decryptor in the clear",
    ),
    UNDER_TLS,
)

SPEC = ModeSpec(
    name="decryptor-he",
    summary="clients encrypt under the public key; a separate decryptor opens only each round's aggregate",
    key_holders=KeyHolders.DECRYPTOR,
    attacker_view=AttackerView.NOTHING,
    plain_adapter=False,
    packings=("flat",),
    selective=False,
    local_link="hebench.protections.decryptor_he.link:decryptor_link",
    flower_cipher=None,  # the decryptor is a party of the local runtime only
    aggregation="hebench.protections.decryptor_he.decryptor:decrypt_aggregate",
    helper_party="hebench.protections.decryptor_he.decryptor:run_decryptor",
    helpers=1,
    helper_doors=("key-authority/decryptor", "aggregator"),  # its own door at the key authority; the aggregator's
    helper_dials=True,
    aggregator_peers=("decryptor",),
    threats=THREATS,
    key_service="hebench.protections.decryptor_he.keys:serve_decryptor_keys",
    survives_dropout=False,  # faults: not yet finishing rounds with the survivors in the running system
    survives_client_loss=True,  # a lost client is a dropout; a lost decryptor still ends the run
    conduits=(HE_KEY,),  # the victim encrypts under the public set; the decryptor's secret set opens it
    chart_marker="o",  # drawn as "other": no marker of its own yet
)
