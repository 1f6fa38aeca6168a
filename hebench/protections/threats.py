"""Threat models as data: who attacks, and what each mode lets them obtain (with the evidence for it).

Every attack before issue #29 assumed one adversary: the honest-but-curious aggregator. Protections differ
most where that ends, so each mode's spec carries a rule per adversary: what the adversary obtains of a
victim's update, the test or document that shows it, and a one-line reason. A suite picks adversaries with
``privacy: {threats: [{adversary: ..., k: ..., strategy: ...}]}``; ``resolve`` turns one into an
:class:`Outcome` for one configuration, or raises ``ValueError`` (problem and fix) where the mode does not
define it or ``k`` does not fit. Layer 0: pure data, no protocol code.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum


class Adversary(Enum):
    """Who attacks (besides the aggregator itself, every one of them works with it)."""

    AGGREGATOR = "aggregator"  # honest-but-curious: follows the protocol, looks at what it receives (the default)
    COLLUDING_CLIENTS = "colluding-clients"  # the aggregator and k of the round's clients
    KEY_HOLDER = "key-holder"  # the aggregator and one party that holds the secret key (an engine, the decryptor)
    SHARE_HOLDERS = "share-holders"  # k of the K share holders (secret sharing)
    MALICIOUS = "malicious-aggregator"  # deviates from the protocol with a strategy
    OBSERVER = "observer"  # outside the parties: reads the network between them


class Strategy(Enum):
    """How a malicious aggregator deviates."""

    MODEL_INCONSISTENCY = "model-inconsistency"  # non-victims get a model whose update is zero (Pasquini et al.)
    TRAP_WEIGHTS = "trap-weights"  # an imprint block at the model's input (Robbing the Fed)
    DROPOUT_LIE = "dropout-lie"  # calls a client survivor to some neighbours and dropped to others
    # secagg's neighbour graph and uploads (hebench.protections.secagg.adversary)
    WITHHOLD_NEIGHBOURS = "withhold-neighbours"  # an empty or short neighbour list, or the neighbours' shares kept
    FORGE_NEIGHBOURS = "forge-neighbours"  # neighbours whose keys the aggregator made itself (sybils)
    SPLIT_GRAPH = "split-graph"  # the clients told different member sets: a graph in parts
    REPLAY = "replay"  # masked uploads counted twice, re-ordered, or replayed from an earlier round


class Obtains(Enum):
    """What the adversary gets of a victim's update."""

    EVERY_UPDATE = "every-update"  # each client's own update, exactly
    VICTIM = "victim-update"  # one chosen victim's update, isolated from the others'
    SUM = "sum"  # the sum of the round's clients' updates (of those not colluding)
    VISIBLE = "visible-coordinates"  # the plaintext coordinates of a selective update
    NOTHING = "nothing"  # nothing usable (ciphertext, uniform shares, TLS records, a refused request)


class NotDefined(ValueError):
    """A mode has no rule for this adversary (or strategy): the threat model does not apply to it."""


K_ALL_OTHERS = "n-1"  # k at least: every other client of the round
K_ALL_HOLDERS = "K"  # k at least: every share holder


@dataclass(frozen=True)
class ThreatRule:
    """What ``adversary`` obtains in one mode, from ``k_at_least`` colluders (0: no k), for ``strategy`` (None:
    any) and, for the observer, with or without TLS (None: either)."""

    adversary: Adversary
    obtains: Obtains
    evidence: str  # the test (path::name) or document that shows it
    note: str
    strategy: Strategy | None = None
    k_at_least: int | str = 0  # an int, K_ALL_OTHERS or K_ALL_HOLDERS
    tls: bool | None = None
    refused: bool = False  # the protocol refuses the deviation (the attack gets nothing because a party says no)


@dataclass(frozen=True)
class Outcome:
    """One adversary against one configuration: what it obtains, averaged over how many clients, and why."""

    adversary: Adversary
    obtains: Obtains
    clients: int  # updates averaged in what it obtains (1 for one client's own update)
    evidence: str
    note: str
    k: int = 0
    strategy: Strategy | None = None
    refused: bool = False

    @property
    def key(self) -> str:
        """The threat model in one token, as records and reports name it (``aggregator``,
        ``colluding-clients:1``, ``malicious-aggregator:trap-weights``, ``observer``)."""
        return threat_key(self.adversary.value, self.k, self.strategy.value if self.strategy else None)


class Conduit(StrEnum):
    """A real protocol path an adversary's view is obtained through (:mod:`hebench.inversion.views.conduits`)."""

    HE_KEY = "he-key"  # the victim's real ciphertext, decrypted with the key set the adversary holds or read
    SHARES = "shares"  # the round's additive shares; k colluding holders add theirs
    SECAGG = "secagg"  # a real SecAgg+ round; colluding clients subtract their own updates
    SECAGG_INCONSISTENCY = "secagg-inconsistency"  # a real SecAgg+ round where the non-victims hold a dead model
    # the live protocol with the adversary's own party in it: the rule's ``view`` names the mode's red-team view
    # (:mod:`hebench.protections.red_team`), e.g. a lying aggregator among honest clients on loopback
    RED_TEAM = "red-team"

    @property
    def whole_round(self) -> bool:
        """The conduit runs every client of a round (not only the victim's upload)."""
        return self in (Conduit.SECAGG, Conduit.SECAGG_INCONSISTENCY, Conduit.RED_TEAM)


@dataclass(frozen=True)
class ConduitRule:
    """A mode's conduit for the outcomes it fits: adversaries (empty: any), what they obtain (None: anything) and
    strategy (None: any). A :attr:`Conduit.RED_TEAM` rule names its ``view`` by import path (``"module:function"``,
    a :data:`hebench.protections.red_team.RedTeamView`), so a protection plugs its adversary in from its spec."""

    conduit: Conduit
    adversaries: tuple[Adversary, ...] = ()
    obtains: Obtains | None = None
    strategy: Strategy | None = None
    view: str | None = None  # RED_TEAM: the mode's red-team view, "module:function"

    def __post_init__(self) -> None:
        if (self.conduit is Conduit.RED_TEAM) != (self.view is not None):
            raise ValueError("a red-team conduit names its view (module:function), and only it does")

    def fits(self, outcome: Outcome) -> bool:
        return (
            (not self.adversaries or outcome.adversary in self.adversaries)
            and (self.obtains is None or outcome.obtains is self.obtains)
            and (self.strategy is None or outcome.strategy is self.strategy)
        )


def conduit_of(rules: tuple[ConduitRule, ...], outcome: Outcome) -> Conduit | None:
    """The first of a mode's conduits that fits ``outcome`` (None: hebench has no real path for it)."""
    rule = conduit_rule(rules, outcome)
    return None if rule is None else rule.conduit


def conduit_rule(rules: tuple[ConduitRule, ...], outcome: Outcome) -> ConduitRule | None:
    """The first of a mode's conduit rules that fits ``outcome``, with its red-team view where it names one."""
    return next((rule for rule in rules if rule.fits(outcome)), None)


def threat_key(adversary: str | None, k: int | None = None, strategy: str | None = None) -> str:
    """``adversary[:k][:strategy]``; records written before threat models read as ``aggregator``."""
    parts = [adversary or Adversary.AGGREGATOR.value]
    if k:
        parts.append(str(k))
    if strategy:
        parts.append(strategy)
    return ":".join(parts)


def adversaries_of(rules: tuple[ThreatRule, ...]) -> list[str]:
    return sorted({r.adversary.value for r in rules})


def _threshold(rule: ThreatRule, clients: int, holders: int) -> int:
    if rule.k_at_least == K_ALL_OTHERS:
        return clients - 1
    if rule.k_at_least == K_ALL_HOLDERS:
        return holders
    return int(rule.k_at_least)


def resolve(
    mode: str,
    rules: tuple[ThreatRule, ...],
    adversary: Adversary,
    *,
    k: int = 0,
    strategy: Strategy | None = None,
    tls: bool = False,
    selective: bool = False,
    clients: int = 1,
    holders: int = 0,
) -> Outcome:
    """What ``adversary`` obtains from one configuration of ``mode`` (``clients`` per round, ``holders`` share
    holders). Raises ``ValueError`` naming the problem and the fix where the mode does not define it."""
    mine = [r for r in rules if r.adversary is adversary]
    if not mine:
        raise NotDefined(
            f"mode {mode} does not define the threat model '{adversary.value}'; it defines "
            f"{', '.join(adversaries_of(rules))}: pick one of those, or leave this configuration out of that threat"
        )
    if adversary in (Adversary.COLLUDING_CLIENTS, Adversary.SHARE_HOLDERS) and k < 1:
        raise ValueError(f"threat '{adversary.value}' needs k, the number colluding: set k: 1 or more")
    if adversary is Adversary.COLLUDING_CLIENTS and k >= clients:
        raise ValueError(
            f"k={k} colluding clients leave no victim among the {clients} clients of a round: "
            f"set k to at most {clients - 1}"
        )
    if adversary is Adversary.SHARE_HOLDERS and k > holders:
        raise ValueError(f"k={k} colluding share holders, but mode {mode} has {holders}: set k to at most {holders}")
    if adversary is Adversary.MALICIOUS and strategy is None:
        raise ValueError("threat 'malicious-aggregator' needs a strategy: " + ", ".join(s.value for s in Strategy))
    fitting = [
        r
        for r in mine
        if (r.strategy is None or r.strategy is strategy)
        and (r.tls is None or r.tls is tls)
        and k >= _threshold(r, clients, holders)
    ]
    if not fitting:
        told = f" with strategy {strategy.value}" if strategy else ""
        raise NotDefined(
            f"mode {mode} does not define the threat model '{adversary.value}'{told}; "
            f"its strategies there: {', '.join(sorted({r.strategy.value for r in mine if r.strategy}))}"
        )
    rule = max(fitting, key=lambda r: _threshold(r, clients, holders))  # the most colluders that apply
    obtains = rule.obtains
    if selective and obtains is Obtains.NOTHING and adversary in (Adversary.AGGREGATOR, Adversary.MALICIOUS):
        obtains = Obtains.VISIBLE  # a selective update's plaintext part reaches the aggregator as it is
    averaged = 1
    if obtains is Obtains.SUM:
        colluders = k if adversary is Adversary.COLLUDING_CLIENTS else 0
        averaged = max(clients - colluders, 1)  # the colluders subtract their own updates
    return Outcome(adversary, obtains, averaged, rule.evidence, rule.note, k, strategy, rule.refused)
