"""offload: a separate engine holding the keys encrypts and decrypts, as a SmartNIC/DPU would; what each adversary
obtains."""

from __future__ import annotations

from hebench.protections.shared_rules import HE_COLLUSION, HE_KEY, malicious
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import K_ALL_OTHERS, Adversary, Obtains, ThreatRule
from hebench.protections.tls.spec import TCP_TAP, UNDER_TLS, in_the_clear

CIPHERTEXT_ONLY = "tests/protections/offload/test_offload_run.py::test_engine_to_aggregator_carries_ciphertext_only"
NO_KEY_BYTES = "tests/protections/offload/test_offload_run.py::test_host_and_aggregator_never_receive_secret_key_bytes"

THREATS = (
    ThreatRule(Adversary.AGGREGATOR, Obtains.NOTHING, CIPHERTEXT_ONLY, "ciphertext under a key only the engines hold"),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.SUM,
        NO_KEY_BYTES,
        "a client host holds no key; it gets the decrypted aggregate from its engine",
        k_at_least=1,
    ),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.VICTIM,
        NO_KEY_BYTES,
        "the aggregate minus every other client's own update is the victim's",
        k_at_least=K_ALL_OTHERS,
    ),
    ThreatRule(
        Adversary.KEY_HOLDER,
        Obtains.EVERY_UPDATE,
        HE_COLLUSION,
        "every engine holds the epoch's one secret key set: one engine decrypts every upload",
    ),
    *malicious(
        Obtains.NOTHING,
        CIPHERTEXT_ONLY,
        "it sums ciphertexts it cannot open; only engines decrypt, for their own host",
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        TCP_TAP,
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
