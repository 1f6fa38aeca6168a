"""host-he: the client process encrypts its update and decrypts the aggregate; what each adversary obtains."""

from __future__ import annotations

from hebench.protections.shared_rules import HE_COLLUSION, HE_KEY, KEYS_TAP, malicious
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec
from hebench.protections.threats import Adversary, Obtains, ThreatRule
from hebench.protections.tls.spec import UNDER_TLS, in_the_clear

HE_CIPHERTEXT = "tests/fl/test_runs.py::test_host_he_sends_only_ciphertext_updates"

THREATS = (
    ThreatRule(Adversary.AGGREGATOR, Obtains.NOTHING, HE_CIPHERTEXT, "ciphertext under a key only the clients hold"),
    ThreatRule(
        Adversary.COLLUDING_CLIENTS,
        Obtains.EVERY_UPDATE,
        HE_COLLUSION,
        "every client holds the epoch's one secret key set: one colluder decrypts every upload",
        k_at_least=1,
    ),
    ThreatRule(Adversary.KEY_HOLDER, Obtains.EVERY_UPDATE, HE_COLLUSION, "the key holders are the clients themselves"),
    *malicious(
        Obtains.NOTHING,
        HE_CIPHERTEXT,
        "whatever model it sends, it sums ciphertexts it cannot open; only clients decrypt",
    ),
    in_the_clear(
        Obtains.EVERY_UPDATE,
        KEYS_TAP,
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
    conduits=(HE_KEY,),
    chart_marker="s",
)
