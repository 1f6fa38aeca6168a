"""The red team's malicious secagg aggregator: it speaks the real protocol to live clients and lies.

:class:`LyingAggregator` holds the stages' building blocks as a cheating server uses them: it keeps every masked
upload apart (not only their sum), tells each client what it likes (neighbour lists or member lists, survivor sets,
sealed shares from keys it made itself) and rebuilds whatever secrets the shares it collected allow. The strategies
(:data:`STRATEGIES`, one per :class:`~hebench.protections.threats.Strategy` the secagg threat rules define) each
drive one round over the clients' channels and return what the aggregator obtained (:class:`Obtained`): the
victim's update when it could read it alone, and the FedAvg of each set of clients it could unmask. Run one
against live clients with :func:`attack` (threads over authenticated loopback channels); both variants of
``params.model`` are spoken, the active one with its member lists, consistency round and signatures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.common.secure_aggregation.crypto.shamir import combine_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import decrypt, encrypt, generate_shared_key
from flwr.common.secure_aggregation.secaggplus_utils import (
    share_keys_plaintext_concat,
    share_keys_plaintext_separate,
)

from hebench.errors import PartyError, PeerClosedError
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.protections.secagg.attacker_round import live_round
from hebench.protections.secagg.common import (
    CURVE,
    add_mod,
    dequantize_sum,
    load_private,
    load_public,
    public_bytes,
    ring_neighbours,
    sub_mod,
    wire_dtype,
)
from hebench.protections.secagg.mask_prg import mask_stream
from hebench.protections.secagg.members import Member, MemberList
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.stages import Key
from hebench.protections.threats import Strategy


@dataclass
class Obtained:
    """What the lying aggregator got out of a round."""

    victim: np.ndarray | None = None  # the victim's update, read alone
    sums: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict)  # each unmasked set's FedAvg
    refusals: dict[int, str] = field(default_factory=dict)  # the clients that refused, with their reason
    uploads: dict[int, np.ndarray] = field(default_factory=dict)  # the masked uploads it kept (for a later replay)


class LyingAggregator:
    """A cheating aggregator's view of one round over ``channels``; client ``victim`` is the one it wants."""

    def __init__(
        self, channels: dict[int, Channel], params: SecAggParams, victim: int = 0, population: int | None = None
    ) -> None:
        self.channels, self.params, self.victim = channels, params, victim
        self.active = params.model == "active"
        self.population = population if population is not None else len(channels)
        self.keys: dict[int, Message] = {}  # each client's sa_keys
        self.weights: dict[int, float] = {}  # the FedAvg weight each client was told (or derived)
        self.told: dict[int, list[int]] = {}  # the neighbours each client was told (or derived)
        self.lists: dict[int, MemberList] = {}  # active: the member list each client was told
        self.masked_with: dict[int, list[int]] = {}  # the neighbours whose shares reached each client
        self.sybils: dict[int, tuple[ec.EllipticCurvePrivateKey, ec.EllipticCurvePrivateKey]] = {}
        self.uploads: dict[int, np.ndarray] = {}  # each masked upload, kept apart
        self.seed_shares: dict[int, list[bytes]] = {}
        self.key_shares: dict[int, list[bytes]] = {}

    # -- the wire ------------------------------------------------------------------------------------------------

    def send(self, i: int, msg: Message) -> bool:
        try:
            self.channels[i].send(msg)
        except PeerClosedError:
            return False
        return True

    def recv(self, i: int, kind: MessageKind) -> Message | None:
        """The next message of ``kind`` from client ``i``; None once it refused (its channel closed)."""
        try:
            return self.channels[i].recv(kind)
        except PeerClosedError:
            return None

    # -- advertise keys ------------------------------------------------------------------------------------------

    def collect_keys(self) -> None:
        for i in self.channels:
            msg = self.recv(i, MessageKind.SA_KEYS)
            if msg is not None:
                self.keys[i] = msg

    def sybil(self, index: int) -> tuple[bytes, bytes]:
        """Public keys the aggregator made itself for a client ``index`` (it holds their secrets)."""
        if index not in self.sybils:
            self.sybils[index] = (ec.generate_private_key(CURVE), ec.generate_private_key(CURVE))
        share, mask = self.sybils[index]
        return public_bytes(share), public_bytes(mask)

    def tell_neighbours(self, i: int, neighbours: list[int], weight: float, forged: frozenset[int] = frozenset()):
        """Honest-but-curious: client ``i``'s neighbour list; those in ``forged`` with the aggregator's own keys."""
        parts = tuple(p for j in neighbours for p in (self.sybil(j) if j in forged else self.keys[j].parts[:2]))
        self.told[i], self.weights[i] = list(neighbours), weight
        self.send(i, Message(MessageKind.SA_NEIGHBOURS, {Key.WEIGHT: weight, Key.NEIGHBOURS: neighbours}, parts))

    def member_list(self, members: list[int], forged: frozenset[int] = frozenset()) -> MemberList:
        """Active: the signed advertisements of ``members``; those in ``forged`` carry the aggregator's own keys
        (signed by a key it made, as the roster's is out of its reach)."""
        listed = []
        for j in members:
            if j in forged:
                share, mask = self.sybil(j)
                samples = int(self.keys[j].meta[Key.SAMPLES]) if j in self.keys else 1
                listed.append(Member(j, samples, share, mask, bytes(64)))
            else:
                msg = self.keys[j]
                listed.append(Member(j, int(msg.meta[Key.SAMPLES]), *msg.parts))
        return MemberList.of(listed)

    def tell_members(self, i: int, listed: MemberList) -> None:
        """Active: client ``i``'s member list; it derives its neighbours and weight from it, as recorded here."""
        self.lists[i], self.told[i] = listed, listed.ring(self.params)[i]
        self.weights[i] = listed.weights()[i]
        self.send(i, listed.message())

    # -- share keys ----------------------------------------------------------------------------------------------

    def relay_shares(self, withhold: frozenset[int] = frozenset()) -> None:
        """Each sealed share to its addressee (none to those in ``withhold``); a forged neighbour's shares made up
        by the aggregator and sealed with its own keys."""
        inbox: dict[int, list[tuple[int, bytes]]] = {i: [] for i in self.told}
        for i in list(self.told):
            msg = self.recv(i, MessageKind.SA_SHARES)
            if msg is None:
                continue
            for j, blob in zip(msg.meta[Key.TO], msg.parts, strict=True):
                j = int(j)
                if j in self.sybils:  # sealed for a key it made: read at once
                    self._keep_share(i, j, blob)
                elif j in inbox:
                    inbox[j].append((i, blob))
        for j, listed in inbox.items():
            if j in withhold:
                listed = []
            listed += [(s, self._forged_share(s, j)) for s in self.told[j] if s in self.sybils]
            self.masked_with[j] = [s for s, _ in listed]
            self.send(j, Message(MessageKind.SA_INBOX, {Key.FROM: [s for s, _ in listed]}, tuple(b for _, b in listed)))

    def _keep_share(self, owner: int, sybil: int, blob: bytes) -> None:
        share_key = self.sybils[sybil][0]
        plain = decrypt(generate_shared_key(share_key, load_public(self.keys[owner].parts[0])), blob)
        tail = len(self.lists[owner].digest) if owner in self.lists else 0
        tail += 32 if self.params.model_check else 0
        _, _, seed_share, key_share = share_keys_plaintext_separate(plain[: len(plain) - tail])
        self.seed_shares.setdefault(owner, []).append(seed_share)
        self.key_shares.setdefault(owner, []).append(key_share)

    def _forged_share(self, sybil: int, to: int) -> bytes:
        """A share from a forged neighbour: any bytes, sealed so that ``to`` opens it."""
        plain = share_keys_plaintext_concat(sybil, to, b"\0" * 8, b"\0" * 8)
        return encrypt(generate_shared_key(self.sybils[sybil][0], load_public(self.keys[to].parts[0])), plain)

    # -- masked upload -------------------------------------------------------------------------------------------

    def collect_uploads(self) -> None:
        """Each masked upload whole and apart (the honest server only keeps their running sum)."""
        width = wire_dtype(self.params.modulus)
        for i in self.masked_with:
            chunks: list[np.ndarray] = []
            try:
                while (msg := self.channels[i].recv()).kind == MessageKind.SA_MASKED_CHUNK:
                    chunks.append(np.frombuffer(msg.parts[0], dtype=width).astype(np.uint64))
            except (PeerClosedError, PartyError):
                continue
            self.uploads[i] = np.concatenate(chunks) if chunks else np.empty(0, np.uint64)

    # -- unmask --------------------------------------------------------------------------------------------------

    def ask_unmask(self, i: int, survivors: list[int], dropped: list[int]) -> None:
        """Honest-but-curious: ask client ``i`` for these survivors' seed shares and these dropped keys' shares."""
        if self.send(i, Message(MessageKind.SA_UNMASK, {Key.SURVIVORS: survivors, Key.DROPPED: dropped})):
            self._take_reveal(self.recv(i, MessageKind.SA_REVEAL))

    def ask_signatures(self, views: dict[int, list[int]]) -> dict[int, bytes]:
        """Active: tell each client its survivor set; the signatures of those that signed."""
        signed = {}
        for i, view in views.items():
            if self.send(i, Message(MessageKind.SA_SURVIVORS, {Key.SURVIVORS: view})):
                msg = self.recv(i, MessageKind.SA_SIGNED)
                if msg is not None:
                    signed[i] = msg.parts[0]
        return signed

    def ask_unmask_signed(self, views: dict[int, list[int]], signed: dict[int, bytes]) -> None:
        """Active: each signer gets the signatures of every client told the same survivor set as itself (all the
        valid ones it could use) and is asked to reveal."""
        for i in signed:
            peers = sorted(j for j in signed if views[j] == views[i])
            meta = {Key.SURVIVORS: views[i], Key.SIGNERS: peers}
            if self.send(i, Message(MessageKind.SA_UNMASK, meta, tuple(signed[j] for j in peers))):
                self._take_reveal(self.recv(i, MessageKind.SA_REVEAL))

    def _take_reveal(self, msg: Message | None) -> None:
        if msg is None:
            return
        seeds_of, keys_of = [int(j) for j in msg.meta[Key.SEEDS_OF]], [int(j) for j in msg.meta[Key.KEYS_OF]]
        for owner, share in zip(seeds_of, msg.parts[: len(seeds_of)], strict=True):
            self.seed_shares.setdefault(owner, []).append(share)
        for owner, share in zip(keys_of, msg.parts[len(seeds_of) :], strict=True):
            self.key_shares.setdefault(owner, []).append(share)

    # -- what the shares give ------------------------------------------------------------------------------------

    def threshold(self, owner: int) -> int:
        """The shares that rebuild ``owner``'s secrets: t, or fewer where an honest-but-curious client lowered it."""
        t = self.params.reconstruction_threshold
        return t if self.active else min(t, len(self.told.get(owner, [])) + 1)

    def seed(self, owner: int) -> bytes | None:
        shares = list(dict.fromkeys(self.seed_shares.get(owner, [])))
        return combine_shares(shares) if len(shares) >= self.threshold(owner) else None

    def mask_key(self, owner: int) -> ec.EllipticCurvePrivateKey | None:
        if owner in self.sybils:
            return self.sybils[owner][1]
        shares = list(dict.fromkeys(self.key_shares.get(owner, [])))
        return load_private(combine_shares(shares)) if len(shares) >= self.threshold(owner) else None

    def pair_key(self, i: int, j: int) -> bytes | None:
        """The pairwise mask key of ``i`` and ``j`` (the mask key of either one rebuilds it)."""
        for mine, theirs in ((j, i), (i, j)):
            secret = self.mask_key(mine)
            if secret is not None:
                public = self.sybil(theirs)[1] if theirs in self.sybils else self.keys[theirs].parts[1]
                return generate_shared_key(secret, load_public(public))
        return None

    def unmask(self, clients: list[int], total: np.ndarray | None = None) -> np.ndarray | None:
        """The FedAvg of ``clients``' updates (their masked uploads summed, or ``total``), every mask the shares
        allow removed; None when a mask is out of reach."""
        m, prg = self.params.modulus, self.params.prg
        if total is None:
            total = np.zeros_like(self.uploads[clients[0]])
            for i in clients:
                total = add_mod(total, self.uploads[i], m)
        inside = set(clients)
        for i in clients:
            seed = self.seed(i)
            if seed is None:
                return None
            total = sub_mod(total, mask_stream(prg, seed, m).take(len(total)), m)
            for j in self.masked_with.get(i, []):
                if j in inside and j not in self.sybils:
                    continue  # cancels within the sum
                key = self.pair_key(i, j)
                if key is None:
                    return None
                pair = mask_stream(prg, key, m).take(len(total))
                total = sub_mod(total, pair, m) if i < j else add_mod(total, pair, m)
        weight = sum(self.weights[i] for i in clients)
        return dequantize_sum(total, len(clients), self.params) / weight

    def read(self, sets: list[list[int]]) -> Obtained:
        """What the collected shares give: the victim alone, and the FedAvg of each set that unmasks."""
        got = Obtained(uploads=dict(self.uploads))
        if self.victim in self.uploads:
            got.victim = self.unmask([self.victim])
        for clients in sets:
            if clients and all(i in self.uploads for i in clients):
                fedavg = self.unmask(sorted(clients))
                if fedavg is not None:
                    got.sums[tuple(sorted(clients))] = fedavg
        return got

    # -- a round told honestly -----------------------------------------------------------------------------------

    def honest_setup(self, members: list[int]) -> None:
        """Keys collected; every member told the honest graph (its ring, or the signed member list)."""
        self.collect_keys()
        if self.active:
            listed = self.member_list(members)
            for i in members:
                self.tell_members(i, listed)
            return
        samples = {i: int(self.keys[i].meta[Key.SAMPLES]) for i in members}
        graph = ring_neighbours(members, self.params)
        for i in members:
            self.tell_neighbours(i, graph[i], samples[i] / sum(samples.values()))

    def honest_unmask(self, survivors: list[int]) -> None:
        """Every survivor told the same survivor set."""
        views = {i: survivors for i in survivors}
        if self.active:
            self.ask_unmask_signed(views, self.ask_signatures(views))
            return
        dropped = sorted(set(self.masked_with) - set(survivors))
        for i in survivors:
            self.ask_unmask(i, survivors, dropped)


# -- the strategies: each drives one round over the channels and returns what it obtained --------------------------


def withhold_neighbours(agg: LyingAggregator, how: str = "empty") -> Obtained:
    """The victim told no neighbour (``empty``; active: a member list of itself alone) or told the true ones and
    sent none of their shares (``inbox``); then asked for its seed's shares."""
    agg.collect_keys()
    v, everyone = agg.victim, sorted(agg.keys)
    if agg.active:
        agg.tell_members(v, agg.member_list([v] if how == "empty" else everyone))
    else:
        neighbours = [] if how == "empty" else ring_neighbours(everyone, agg.params)[v]
        agg.tell_neighbours(v, neighbours, 1 / len(everyone))
    agg.relay_shares(withhold=frozenset({v}) if how == "inbox" else frozenset())
    agg.collect_uploads()
    if v in agg.uploads:
        agg.honest_unmask([v])
    return agg.read([])


def forge_neighbours(agg: LyingAggregator) -> Obtained:
    """The victim's neighbours' keys replaced by keys the aggregator made (sybils): it opens the victim's shares."""
    agg.collect_keys()
    v, everyone = agg.victim, sorted(agg.keys)
    others = frozenset(j for j in everyone if j != v)
    if agg.active:
        agg.tell_members(v, agg.member_list(everyone, forged=others))
    else:
        agg.tell_neighbours(v, ring_neighbours(everyone, agg.params)[v], 1 / len(everyone), forged=others)
    for j in agg.told[v]:
        agg.sybil(j)
    agg.relay_shares()
    agg.collect_uploads()
    return agg.read([])


def dropout_lie(agg: LyingAggregator) -> Obtained:
    """After honest uploads, every client told that the victim survived (its seed's shares) and that the victim's
    neighbours dropped, except each neighbour about itself (their mask keys' shares): issue #36's N2."""
    everyone = sorted(agg.channels)
    agg.honest_setup(everyone)
    agg.relay_shares()
    agg.collect_uploads()
    v = agg.victim
    near = set(agg.masked_with.get(v, []))
    views = {i: sorted(set(agg.uploads) - (near - {i})) for i in agg.uploads}
    if agg.active:
        agg.ask_unmask_signed(views, agg.ask_signatures(views))
    else:
        for i, view in views.items():
            agg.ask_unmask(i, view, sorted(set(agg.masked_with) - set(view)))
    return agg.read([everyone])


def split_graph(agg: LyingAggregator, parts: list[list[int]], told: dict[int, list[int]] | None = None) -> Obtained:
    """The clients told different member sets: each of ``parts`` a round of its own (``told``: a client's list where
    it is not its part, so that lists overlap)."""
    agg.collect_keys()
    part_of = {i: part for part in parts for i in part} | (told or {})
    for i in sorted(agg.keys):
        part = part_of[i]
        if agg.active:
            agg.tell_members(i, agg.member_list(part))
        else:
            samples = {j: int(agg.keys[j].meta[Key.SAMPLES]) for j in part}
            weight = samples[i] / sum(samples.values())
            agg.tell_neighbours(i, ring_neighbours(part, agg.params)[i], weight)
    agg.relay_shares()
    agg.collect_uploads()
    views = {i: sorted(set(part_of[i]) & set(agg.uploads)) for i in agg.uploads}
    if agg.active:
        agg.ask_unmask_signed(views, agg.ask_signatures(views))
    else:
        for i, view in views.items():
            agg.ask_unmask(i, view, sorted(set(agg.masked_with) & set(part_of[i]) - set(view)))
    return agg.read([sorted(set(part) & set(agg.uploads)) for part in parts])


def replay(agg: LyingAggregator, earlier: dict[int, np.ndarray] | None = None) -> Obtained:
    """An honest round, but the sum it unmasks counts the victim's upload twice and another's in re-ordered halves
    (or, given ``earlier`` uploads, the victim's from an earlier round in place of this one's)."""
    everyone = sorted(agg.channels)
    agg.honest_setup(everyone)
    agg.relay_shares()
    agg.collect_uploads()
    agg.honest_unmask(sorted(agg.uploads))
    v, m = agg.victim, agg.params.modulus
    uploads = dict(agg.uploads)
    if earlier is not None:
        uploads[v] = earlier[v]
    else:
        uploads[v] = add_mod(uploads[v], agg.uploads[v], m)
        other = next(i for i in uploads if i != v)
        half = len(uploads[other]) // 2
        uploads[other] = np.concatenate([uploads[other][half:], uploads[other][:half]])
    total = np.zeros_like(uploads[v])
    for upload in uploads.values():
        total = add_mod(total, upload, m)
    fedavg = agg.unmask(everyone, total)
    got = Obtained(sums={tuple(everyone): fedavg} if fedavg is not None else {}, uploads=dict(agg.uploads))
    saved, agg.uploads = agg.uploads, uploads
    got.victim = agg.unmask([v])  # the victim's (replayed) upload read with what this round revealed
    agg.uploads = saved
    return got


def curious(agg: LyingAggregator) -> Obtained:
    """The protocol as written (the honest-but-curious aggregator; model inconsistency and trap weights lie in the
    models the clients hold): the aggregator still keeps each upload apart and reads what the shares allow."""
    everyone = sorted(agg.channels)
    agg.honest_setup(everyone)
    agg.relay_shares()
    agg.collect_uploads()
    agg.honest_unmask(sorted(agg.uploads))
    return agg.read([sorted(agg.uploads)])


STRATEGIES: dict[Strategy, Callable[..., Obtained]] = {
    Strategy.WITHHOLD_NEIGHBOURS: withhold_neighbours,
    Strategy.FORGE_NEIGHBOURS: forge_neighbours,
    Strategy.DROPOUT_LIE: dropout_lie,
    Strategy.SPLIT_GRAPH: split_graph,
    Strategy.REPLAY: replay,
    Strategy.MODEL_INCONSISTENCY: curious,
    Strategy.TRAP_WEIGHTS: curious,
}


def attack(
    strategy: Strategy | None,
    vectors: dict[int, np.ndarray],
    params: SecAggParams,
    *,
    victim: int = 0,
    digests: dict[int, bytes] | None = None,
    population: int | None = None,
    **how: object,
) -> Obtained:
    """One live round of honest clients (client i uploading ``vectors[i]``, equal weights, holding a model of digest
    ``digests[i]``) against the lying aggregator playing ``strategy`` (``how``: its options; None: the protocol as
    written, by an aggregator that keeps every upload apart)."""
    lie = curious if strategy is None else STRATEGIES[strategy]

    def serve(channels: dict[int, Channel]) -> Obtained:
        return lie(LyingAggregator(channels, params, victim, population), **how)

    got = live_round(vectors, dict.fromkeys(vectors, 10), params, serve, digests, population)
    obtained = got.served if isinstance(got.served, Obtained) else Obtained()
    obtained.refusals = got.refusals
    return obtained
