"""decryptor-he: clients encrypt under the public key, a separate decryptor opens only each round's aggregate;
what each adversary obtains."""

from __future__ import annotations

from hebench.protections.shared_rules import HE_KEY, KEYS_TAP, malicious
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import K_ALL_OTHERS, Adversary, Obtains, ThreatRule
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

MODE_TESTS = "tests/protections/decryptor_he/test_decryptor_mode.py"
SEALED = f"{MODE_TESTS}::test_the_aggregator_sees_ciphertext_and_sealed_aggregates_only"
NO_SECRET = f"{MODE_TESTS}::test_a_colluding_clients_key_set_has_no_secret_key"
ONLY_DECRYPTOR = f"{MODE_TESTS}::test_only_the_decryptor_holds_the_secret_key"

THREATS = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.NOTHING,
        SEALED,
        "ciphertext in; the decrypted aggregate comes back sealed to the clients",
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.SUM,
        NO_SECRET,
        "no client holds a secret key; a colluder opens only the round's aggregate",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        NO_SECRET,
        "the aggregate minus every other client's own update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        Adversary.KEY_HOLDER,
        Obtains.EVERY_UPDATE,
        ONLY_DECRYPTOR,
        "the decryptor holds the secret key set: with it the aggregator decrypts every upload",
    ),
    *malicious(
        Obtains.NOTHING,
        SEALED,
        "whatever it sends the decryptor (even one client's ciphertext), the answer is sealed to the clients; "
        "with one colluding client, model inconsistency or substitution gives it one victim per round",
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        KEYS_TAP,
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
