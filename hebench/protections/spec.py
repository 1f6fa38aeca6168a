"""What defines a mode: who holds which keys, what goes on the wire, how each runtime builds its parties, what
each adversary obtains, and every other fact the rest of hebench asks about a mode (it never compares names).

A spec is static data. The parts a mode runs (links, aggregation, helper processes, key service) are named by
import path (``"package.module:function"``) and resolved only by the runtime that uses them, so this module
(and the suite parser that reads it) imports nothing above :mod:`hebench.errors` and the spec-level modules
of :mod:`hebench.protections`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from hebench.errors import ParameterError
from hebench.protections.params import ModeParams
from hebench.protections.threats import Adversary, Conduit, ConduitRule, Outcome, Strategy, ThreatRule, conduit_of
from hebench.protections.threats import resolve as resolve_threat


class KeyHolders(Enum):
    """Which parties receive the epoch's secret key set from the key authority."""

    NONE = "none"  # nothing is encrypted
    CLIENTS = "clients"  # the client process itself (host-he)
    ENGINES = "engines"  # a separate engine per client (offload); the client host never holds a key
    DECRYPTOR = "decryptor"  # one separate decryptor; clients hold the public set only (decryptor-he)


class AttackerView(Enum):
    """What the aggregator (the attacker) can use from one client's upload, before selective masks."""

    FULL_UPDATE = "full-update"  # the plaintext update
    NOTHING = "nothing"  # ciphertext only: nothing usable without the secret key
    SUM = "sum"  # only the sum of the round's participating clients' updates (secure aggregation)
    SHARES = "shares"  # one aggregator's uniformly random shares (all of them colluding: the plain updates)


@dataclass(frozen=True)
class ModeSpec:
    """One mode. Adding a mode is its package, holding a spec module (this spec, its threat rules, its params)
    and the parts the spec names, plus one line in :data:`hebench.protections.registry.BUILT_IN` (or
    ``register_mode`` for a plugin's): see docs/development.md."""

    name: str
    summary: str
    key_holders: KeyHolders
    attacker_view: AttackerView
    plain_adapter: bool  # True: the configuration uses the `plain` adapter (no HE)
    packings: tuple[str, ...]  # the update layouts this mode can send
    selective: bool  # may combine with a selective mask
    local_link: str  # "module:function": (party context, channels) -> Link, for the local runtime
    flower_cipher: str | None  # "module:function": (plan, node, hub, node state) -> Cipher; None: not on Flower
    # the aggregator's half of a round, after "train": (aggregator, chosen, adapter) -> Collected
    aggregation: str = "hebench.fl.aggregator:sum_uploads"
    params_model: type[ModeParams] | None = None  # the mode's own ``params:`` (None: they are the adapter's)
    helper_party: str | None = None  # "module:function": body of each extra aggregator process (share holders)
    helpers: int = 0  # helper processes of a mode without its own params (decryptor-he: its decryptor)
    # the doors a helper process knocks at (hebench.fl.party's door names: "aggregator", "key-authority/decryptor");
    # a helper that knocks nowhere keeps a door of its own that admits the clients (secret sharing's share holders)
    helper_doors: tuple[str, ...] = ()
    helper_dials: bool = False  # a helper is told where the key authority and the aggregator listen (it dials)
    aggregator_peers: tuple[str, ...] = ()  # helpers that dial the aggregator, by their hello role
    threats: tuple[ThreatRule, ...] = ()  # what each adversary obtains here (the mode's spec module)
    # (variant, its rules): a variant its params choose (``ModeParams.variant``) whose rules replace ``threats``
    variant_threats: tuple[tuple[str, tuple[ThreatRule, ...]], ...] = ()
    # "module:function": the key authority's loop where the secret set goes to one helper, not to the key holders
    # of the common path (decryptor-he): (party context, clients' door, aggregator's door, helper's door, records)
    key_service: str | None = None
    survives_dropout: bool = False  # a round finishes with the clients that arrived when others leave (faults:)
    survives_client_loss: bool = False  # a client process that dies is a dropout of its round, not the run's end
    conduits: tuple[ConduitRule, ...] = ()  # the real protocol paths hebench attacks this mode through
    chart_marker: str = "o"  # its configurations' marker in the cost-vs-leakage chart (matplotlib)

    def parse_params(self, params: dict[str, Any]) -> ModeParams | None:
        """The mode's own parameters (pydantic raises ValueError on a bad set), or None."""
        return None if self.params_model is None else self.params_model.model_validate(params)

    @property
    def needs_engines(self) -> bool:
        return self.key_holders is KeyHolders.ENGINES

    @property
    def baseline(self) -> bool:
        """The unprotected mode every cost is compared with: plaintext updates the aggregator reads whole."""
        return self.plain_adapter and self.attacker_view is AttackerView.FULL_UPDATE

    def conduit(self, outcome: Outcome) -> Conduit | None:
        """The real protocol path through which ``outcome``'s adversary obtains its view (None: none in hebench)."""
        return conduit_of(self.conduits, outcome)

    @property
    def encrypts(self) -> bool:
        """Every update the aggregator receives in this mode is ciphertext (selective: its masked part)."""
        return self.attacker_view is AttackerView.NOTHING

    def rules(self, params: ModeParams | None = None) -> tuple[ThreatRule, ...]:
        """The threat rules of the variant ``params`` choose (the mode's ``threats`` without one)."""
        variant = params.variant if params is not None else None
        return dict(self.variant_threats).get(variant, self.threats) if variant is not None else self.threats

    @property
    def every_rule(self) -> tuple[ThreatRule, ...]:
        """The rules of every variant (``threats`` first), each once."""
        return tuple(dict.fromkeys((*self.threats, *(r for _, rules in self.variant_threats for r in rules))))

    def outcome(
        self,
        adversary: Adversary,
        *,
        k: int = 0,
        strategy: Strategy | None = None,
        tls: bool = False,
        selective: bool = False,
        clients: int = 1,
        holders: int = 0,
        params: ModeParams | None = None,
    ) -> Outcome:
        """What ``adversary`` obtains from a configuration of this mode with ``params`` (ValueError where it is not
        defined)."""
        return resolve_threat(
            self.name,
            self.rules(params),
            adversary,
            k=k,
            strategy=strategy,
            tls=tls,
            selective=selective,
            clients=clients,
            holders=holders,
        )

    def check(self, adapter: str, packing: str, selective: bool) -> None:
        """Raise ValueError (the suite parser's currency) when a configuration does not fit this mode."""
        if self.plain_adapter and adapter != "plain":
            raise ValueError(f"mode {self.name} sends plaintext: use adapter: plain (or an HE mode such as host-he)")
        if not self.plain_adapter and adapter == "plain":
            raise ValueError(f"mode {self.name} needs an HE adapter, not plain (e.g. adapter: tenseal-ckks)")
        if selective and not self.selective:
            raise ValueError(f"selective encryption needs an HE mode (host-he or offload), not {self.name}")
        if packing not in self.packings:
            raise ValueError(f"mode {self.name} sends {' or '.join(self.packings)} updates: use packing: flat")


def resolve(target: str) -> Callable[..., Any]:
    """The function a spec names as ``module:function``."""
    module, _, name = target.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ParameterError(f"mode factory '{target}' cannot be loaded: {err}", "check the mode's spec") from None
