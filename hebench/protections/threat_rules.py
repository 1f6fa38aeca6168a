"""Each built-in mode's threat rules: what every adversary obtains there, and the test that shows it.

Read with :mod:`hebench.protections.threats`. A rule's ``evidence`` names the test (``path::name``) whose
assertion is the claim; ``docs/threats.md`` renders these tables.
"""

from __future__ import annotations

from hebench.protections.threats import K_ALL_HOLDERS, K_ALL_OTHERS, Adversary, Obtains, Strategy, ThreatRule

A, G, S = Adversary, Obtains, Strategy  # G: what the adversary gets

TLS_TAP = "tests/net/test_tls_doors.py::test_a_network_observer_sees_no_update_bytes_over_tls"
TCP_TAP = "tests/net/test_tls_doors.py::test_control_without_tls_the_observer_reads_the_update"
KEYS_TAP = "tests/inversion/test_threat_views.py::test_without_tls_an_observer_reads_the_secret_key_set_off_the_wire"
HE_COLLUSION = "tests/inversion/test_threat_views.py::test_a_colluding_client_decrypts_the_victims_real_ciphertext"
INCONSISTENCY = (
    "tests/protections/secagg/test_secagg_threats.py::test_model_inconsistency_isolates_the_victim_in_the_real_sum"
)
COLLUDERS = (
    "tests/protections/secagg/test_secagg_threats.py::test_colluders_subtract_their_updates_from_the_real_secagg_sum"
)
IMPRINT_SUM = (
    "tests/inversion/test_imprint.py::test_imprint_reads_the_update_after_local_steps_and_the_fedavg_aggregate"
)
IMPRINT = "tests/inversion/test_imprint.py::test_imprint_recovers_a_batch_of_four_exactly"
HE_CIPHERTEXT = "tests/fl/test_runs.py::test_host_he_sends_only_ciphertext_updates"


def malicious(obtains: Obtains, evidence: str, note: str) -> tuple[ThreatRule, ThreatRule]:
    """The same outcome for model inconsistency and trap weights (a mode without dropout recovery)."""
    return (
        ThreatRule(A.MALICIOUS, obtains, evidence, note, strategy=S.MODEL_INCONSISTENCY),
        ThreatRule(A.MALICIOUS, obtains, evidence, note, strategy=S.TRAP_WEIGHTS),
    )


OBSERVER_BOTH_WAYS = (
    ThreatRule(A.OBSERVER, G.NOTHING, TLS_TAP, "under TLS the wire carries TLS records only", tls=True),
)

RAW = (
    ThreatRule(A.AGGREGATOR, G.EVERY_UPDATE, "tests/fl/test_runs.py::test_raw_mode_does_send_plaintext", "plaintext"),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.EVERY_UPDATE,
        "tests/fl/test_runs.py::test_raw_mode_does_send_plaintext",
        "the aggregator has every update already",
        k_at_least=1,
    ),
    ThreatRule(
        A.MALICIOUS,
        G.EVERY_UPDATE,
        "tests/fl/test_runs.py::test_raw_mode_does_send_plaintext",
        "every update in plaintext, of whatever model it sent",
        strategy=S.MODEL_INCONSISTENCY,
    ),
    ThreatRule(
        A.MALICIOUS, G.EVERY_UPDATE, IMPRINT, "trap weights read a batch out of one update", strategy=S.TRAP_WEIGHTS
    ),
    ThreatRule(A.OBSERVER, G.EVERY_UPDATE, TCP_TAP, "the update crosses the wire in the clear", tls=False),
    *OBSERVER_BOTH_WAYS,
)

HOST_HE = (
    ThreatRule(A.AGGREGATOR, G.NOTHING, HE_CIPHERTEXT, "ciphertext under a key only the clients hold"),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.EVERY_UPDATE,
        HE_COLLUSION,
        "every client holds the epoch's one secret key set: one colluder decrypts every upload",
        k_at_least=1,
    ),
    ThreatRule(A.KEY_HOLDER, G.EVERY_UPDATE, HE_COLLUSION, "the key holders are the clients themselves"),
    *malicious(
        G.NOTHING, HE_CIPHERTEXT, "whatever model it sends, it sums ciphertexts it cannot open; only clients decrypt"
    ),
    ThreatRule(
        A.OBSERVER,
        G.EVERY_UPDATE,
        KEYS_TAP,
        "without TLS the key authority's secret key set crosses the wire to each client in the clear",
        tls=False,
    ),
    *OBSERVER_BOTH_WAYS,
)

OFFLOAD = (
    ThreatRule(
        A.AGGREGATOR,
        G.NOTHING,
        "tests/protections/offload/test_offload_run.py::test_engine_to_aggregator_carries_ciphertext_only",
        "ciphertext under a key only the engines hold",
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.SUM,
        "tests/protections/offload/test_offload_run.py::test_host_and_aggregator_never_receive_secret_key_bytes",
        "a client host holds no key; it gets the decrypted aggregate from its engine",
        k_at_least=1,
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.VICTIM,
        "tests/protections/offload/test_offload_run.py::test_host_and_aggregator_never_receive_secret_key_bytes",
        "the aggregate minus every other client's own update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        A.KEY_HOLDER,
        G.EVERY_UPDATE,
        HE_COLLUSION,
        "every engine holds the epoch's one secret key set: one engine decrypts every upload",
    ),
    *malicious(
        G.NOTHING,
        "tests/protections/offload/test_offload_run.py::test_engine_to_aggregator_carries_ciphertext_only",
        "it sums ciphertexts it cannot open; only engines decrypt, for their own host",
    ),
    ThreatRule(
        A.OBSERVER,
        G.EVERY_UPDATE,
        TCP_TAP,
        "without TLS the host streams its plaintext update to its engine in the clear",
        tls=False,
    ),
    *OBSERVER_BOTH_WAYS,
)

SECAGG = (
    ThreatRule(
        A.AGGREGATOR,
        G.SUM,
        "tests/protections/test_protection_modes.py::test_the_attacker_of_secagg_sees_the_rounds_sum_and_of_sharing_nothing",
        "the unmasked sum of the round's survivors",
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS, G.SUM, COLLUDERS, "the colluders subtract their own updates from the sum", k_at_least=1
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.VICTIM,
        COLLUDERS,
        "with every other client colluding the sum is the victim's update",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        A.MALICIOUS,
        G.VICTIM,
        INCONSISTENCY,
        "non-victims get a model whose update is zero, so the sum is the victim's (Pasquini et al., CCS 2022); "
        "params.model_check detects it",
        strategy=S.MODEL_INCONSISTENCY,
    ),
    ThreatRule(A.MALICIOUS, G.SUM, IMPRINT_SUM, "trap weights read images out of the sum", strategy=S.TRAP_WEIGHTS),
    ThreatRule(
        A.MALICIOUS,
        G.NOTHING,
        "tests/protections/secagg/test_secagg_threats.py::test_lying_about_survivors_to_different_neighbours_unmasks_nothing",
        "a client refuses contradicting unmask requests, and t > shares/2 leaves a split lie short of shares",
        strategy=S.DROPOUT_LIE,
        refused=True,
    ),
    ThreatRule(
        A.OBSERVER,
        G.SUM,
        "hebench/protections/secagg/server.py::secagg_round",
        "masked uploads and sealed shares are useless to it; the unmasked FedAvg goes back to every client "
        "in the clear",
        tls=False,
    ),
    *OBSERVER_BOTH_WAYS,
)

SECRET_SHARING = (
    ThreatRule(
        A.AGGREGATOR,
        G.NOTHING,
        "tests/protections/sharing/test_secret_sharing.py::test_one_aggregators_share_is_uniform_and_never_the_update",
        "one share of each update: uniform words",
    ),
    ThreatRule(
        A.SHARE_HOLDERS,
        G.NOTHING,
        "tests/inversion/test_threat_views.py::test_fewer_than_all_share_holders_see_uniform_words",
        "fewer than all K shares are uniform and independent of the update",
        k_at_least=1,
    ),
    ThreatRule(
        A.SHARE_HOLDERS,
        G.EVERY_UPDATE,
        "tests/inversion/test_threat_views.py::test_all_share_holders_recover_every_update_exactly",
        "all K shares add up to each update",
        k_at_least=K_ALL_HOLDERS,
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.SUM,
        "tests/protections/sharing/test_secret_sharing.py::test_sum_of_per_aggregator_sums_equals_the_plain_integer_fedavg_numerator_exactly",
        "clients rebuild the round's sum from the holders' sums",
        k_at_least=1,
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.VICTIM,
        "tests/protections/sharing/test_secret_sharing.py::test_sum_of_per_aggregator_sums_equals_the_plain_integer_fedavg_numerator_exactly",
        "the rebuilt sum minus every other client's update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    *malicious(
        G.NOTHING,
        "tests/protections/sharing/test_secret_sharing.py::test_one_aggregators_share_is_uniform_and_never_the_update",
        "the coordinator never holds more than one share of anything; clients rebuild the sum",
    ),
    ThreatRule(
        A.OBSERVER,
        G.EVERY_UPDATE,
        "tests/net/test_tls_doors.py::test_control_share_holder_traffic_over_tcp_is_readable",
        "without TLS all K shares of each update cross the wire: their sum is the update",
        tls=False,
    ),
    *OBSERVER_BOTH_WAYS,
)

DECRYPTOR = (
    ThreatRule(
        A.AGGREGATOR,
        G.NOTHING,
        "tests/protections/decryptor_he/test_decryptor_mode.py::test_the_aggregator_sees_ciphertext_and_sealed_aggregates_only",
        "ciphertext in; the decrypted aggregate comes back sealed to the clients",
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.SUM,
        "tests/protections/decryptor_he/test_decryptor_mode.py::test_a_colluding_clients_key_set_has_no_secret_key",
        "no client holds a secret key; a colluder opens only the round's aggregate",
        k_at_least=1,
    ),
    ThreatRule(
        A.COLLUDING_CLIENTS,
        G.VICTIM,
        "tests/protections/decryptor_he/test_decryptor_mode.py::test_a_colluding_clients_key_set_has_no_secret_key",
        "the aggregate minus every other client's own update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        A.KEY_HOLDER,
        G.EVERY_UPDATE,
        "tests/protections/decryptor_he/test_decryptor_mode.py::test_only_the_decryptor_holds_the_secret_key",
        "the decryptor holds the secret key set: with it the aggregator decrypts every upload",
    ),
    *malicious(
        G.NOTHING,
        "tests/protections/decryptor_he/test_decryptor_mode.py::test_the_aggregator_sees_ciphertext_and_sealed_aggregates_only",
        "whatever it sends the decryptor (even one client's ciphertext), the answer is sealed to the clients; "
        "with one colluding client, model inconsistency or substitution gives it one victim per round",
    ),
    ThreatRule(
        A.OBSERVER,
        G.EVERY_UPDATE,
        KEYS_TAP,
        "without TLS the key authority's secret key set crosses the wire to the decryptor in the clear",
        tls=False,
    ),
    *OBSERVER_BOTH_WAYS,
)
