"""host-he: the client process encrypts its update and decrypts the aggregate; what each adversary obtains."""

from __future__ import annotations

from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import Adversary, Conduit, ConduitRule, Obtains, Strategy, ThreatRule
from hebench.protections.tls.spec import OBSERVER_VIEW, UNDER_TLS, in_the_clear

RED_TEAM = "tests/protections/host_he/test_red_team.py"
RED_TEAM_VIEW = "hebench.protections.host_he.adversary:red_team_view"

THREATS = (
    ThreatRule(
        Adversary.AGGREGATOR,
        Obtains.NOTHING,
        f"{RED_TEAM}::test_red_team_host_he_aggregator_reads_nothing",
        "ciphertext under a key only the clients hold",
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_host_he_colluding_clients_decrypt_every_update",
        "every client holds the epoch's one secret key set: one colluder decrypts every upload",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.KEY_HOLDER,
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_host_he_key_holder_decrypts_every_update",
        "the key holders are the clients themselves",
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        f"{RED_TEAM}::test_red_team_host_he_malicious_aggregator_model_inconsistency_reads_nothing",
        "it hands each client a model of its choice (encrypted under the public set), then sums ciphertexts it "
        "cannot open; only clients decrypt",
        strategy=Strategy.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        Adversary.MALICIOUS,
        Obtains.NOTHING,
        f"{RED_TEAM}::test_red_team_host_he_malicious_aggregator_trap_weights_reads_nothing",
        "the victim trains the trap model it was handed, and uploads ciphertext the aggregator cannot open",
        strategy=Strategy.TRAP_WEIGHTS,
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        f"{RED_TEAM}::test_red_team_host_he_observer_without_tls_reads_the_key_set_and_every_update",
        "without TLS the key authority's secret key set crosses the wire to each client in the clear",
    ),
    UNDER_TLS,
)

SPEC = ModeSpec(
    name="host-he",
    summary="the client process encrypts its update and decrypts the aggregate",
    key_holders=KeyHolders.CLIENTS,
    attacker_view=AttackerView.NOTHING,
    plain_adapter=False,
    packings=("flat", "per-layer"),
    selective=True,
    local_link="hebench.fl.link:direct_link",
    flower_cipher="hebench.runtime.flower.ciphers:hub_key_cipher",
    threats=THREATS,
    survives_dropout=True,
    survives_client_loss=True,
    # every adversary's view from a live round with its own party in it: the lying aggregator (and the key set a
    # colluding client hands it), or the observer's taps
    conduits=(
        ConduitRule(Conduit.RED_TEAM, (Adversary.OBSERVER,), view=OBSERVER_VIEW),
        ConduitRule(Conduit.RED_TEAM, view=RED_TEAM_VIEW),
    ),
    chart_marker="s",
)
