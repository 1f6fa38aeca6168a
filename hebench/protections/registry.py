"""The registry of modes: raw, host-he and offload are built in; ``register_mode`` adds one."""

from __future__ import annotations

from hebench.errors import ParameterError
from hebench.protections import threat_rules
from hebench.protections.params import SecAggParams, SecretSharingParams
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec

RAW = ModeSpec(
    name="raw",
    summary="plaintext FedAvg: the baseline every cost is compared with",
    key_holders=KeyHolders.NONE,
    attacker_view=AttackerView.FULL_UPDATE,
    plain_adapter=True,
    packings=("flat", "per-layer"),
    selective=False,
    local_link="hebench.fl.link:direct_link",
    flower_cipher="hebench.fl.cipher:plain_cipher",
    threats=threat_rules.RAW,
)
HOST_HE = ModeSpec(
    name="host-he",
    summary="the client process encrypts its update and decrypts the aggregate",
    key_holders=KeyHolders.CLIENTS,
    attacker_view=AttackerView.NOTHING,
    plain_adapter=False,
    packings=("flat", "per-layer"),
    selective=True,
    local_link="hebench.fl.link:direct_link",
    flower_cipher="hebench.runtime.flower.ciphers:hub_key_cipher",
    threats=threat_rules.HOST_HE,
)
OFFLOAD = ModeSpec(
    name="offload",
    summary="a separate engine holding the keys encrypts and decrypts, as a SmartNIC/DPU would",
    key_holders=KeyHolders.ENGINES,
    attacker_view=AttackerView.NOTHING,
    plain_adapter=False,
    packings=("flat",),  # engines stream the flat update in chunks
    selective=True,
    local_link="hebench.protections.offload.link:engine_link",
    flower_cipher="hebench.runtime.flower.ciphers:node_engine_cipher",
    threats=threat_rules.OFFLOAD,
)

SECAGG = ModeSpec(
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
    threats=threat_rules.SECAGG,
)
SECRET_SHARING = ModeSpec(
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
    threats=threat_rules.SECRET_SHARING,
)
DECRYPTOR_HE = ModeSpec(
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
    helper_doors=("engine", "aggregator"),  # the key authority admits the decryptor at its engine door
    helper_dials=True,
    aggregator_peers=("decryptor",),
    threats=threat_rules.DECRYPTOR,
)

_MODES: dict[str, ModeSpec] = {m.name: m for m in (RAW, HOST_HE, OFFLOAD, SECAGG, SECRET_SHARING, DECRYPTOR_HE)}


def register_mode(spec: ModeSpec) -> None:
    """Add a mode (a plugin's, or a test's); names are unique."""
    if spec.name in _MODES and _MODES[spec.name] != spec:
        raise ParameterError(f"a mode named '{spec.name}' is already registered", "choose another name")
    _MODES[spec.name] = spec


def mode_names() -> tuple[str, ...]:
    return tuple(_MODES)


def get_mode(name: str) -> ModeSpec:
    try:
        return _MODES[name]
    except KeyError:
        raise ParameterError(f"unknown mode '{name}'", f"choose one of {', '.join(_MODES)}") from None


def find_mode(name: str | None) -> ModeSpec | None:
    """The spec of a mode named in stored records, or None for one this hebench does not know."""
    return _MODES.get(name or "")
