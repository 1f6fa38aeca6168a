"""A client's half of one SecAgg+ round (Bell et al. 2020; Flower's ``secaggplus_mod`` stages), over its
channel to the aggregator, which relays every message between clients. ``params.model`` picks the adversary model
it runs in: ``active`` (the default) or ``honest-but-curious``.

1. advertise keys: two ECDH key pairs (one encrypts shares in transit, one seeds pairwise masks);
2. share keys: Shamir shares of the self-mask seed and of the mask secret key, one per neighbour,
   each encrypted for its neighbour;
3. masked upload: quantised weighted update + self mask +/- one pairwise mask per neighbour, mod M,
   streamed chunk by chunk (``sa_masked_chunk`` {offset, values}, then ``sa_masked``): every mask is
   expanded from its PRG chunk by chunk at the chunk's offset, so no model-sized mask is ever built;
4. unmask: for each neighbour the aggregator says survived, the share of its self-mask seed; for each
   that dropped, the share of its mask secret key; never both for the same client in one round.

Active model (Bonawitz et al. CCS 2017's malicious setting, on SecAgg+'s ring): the client signs its advertised keys
with its long-term key (:mod:`hebench.fl.roster`); in place of a neighbour list it gets every member's signed keys
(:mod:`~hebench.protections.secagg.members`), checks each signature against the roster and that the list holds
itself unchanged, at least ``params.min_members`` and at most the clients the round draws, and derives the ring and
the FedAvg weights itself. Its shares carry the list's digest sealed, so a neighbour told another list refuses them.
It always shares with threshold t and refuses to upload with fewer than t - 1 neighbours' shares. Before the unmask
comes the consistency round (:mod:`~hebench.protections.secagg.consistency`): it signs the survivor set it was told
and reveals shares only with the survivors' matching signatures from more than half the round; it decides itself
which secret of each neighbour to reveal (the seed's share of a survivor, the mask key's of a neighbour that shared
and did not upload).

Honest-but-curious model (SecAgg+ as Flower runs it: the aggregator's lists are taken on trust). A lying aggregator
still cannot collect both secrets of one client through this client's own answers: it refuses any request that
contradicts what the aggregator declared earlier in the round (a client once called dropped never gets
its seed share revealed, and the reverse), refuses to call itself dropped, and refuses a neighbour list
so long that t shares of each secret could come from disjoint holders (it needs 2t > holders; the suite
validator requires t > num_shares / 2 for the same reason). It also refuses to upload when fewer than t - 1
neighbours' shares reached it (as Flower's secaggplus_mod does). But its threshold is ``min(t, holders)`` of
the neighbours it is told, so an empty list makes its seed a 1-of-1 share (issue #36, N1); survivor sets told
differently to different holders (N2) and split graphs (N3) go unseen. ``spec.py`` states what that gives.
"""

from __future__ import annotations

import base64
import os

import numpy as np
from cryptography.fernet import InvalidToken
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.common.secure_aggregation.crypto.shamir import create_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import decrypt, encrypt, generate_shared_key
from flwr.common.secure_aggregation.secaggplus_utils import (
    share_keys_plaintext_concat,
    share_keys_plaintext_separate,
)

from hebench.errors import PartyError
from hebench.fl.chunks import DEFAULT_CHUNK_VALUES
from hebench.fl.meter import PhaseMeter
from hebench.fl.ring_stream import spans
from hebench.fl.roster import ClientIdentity
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.protections.secagg.common import (
    CURVE,
    add_mod,
    load_public,
    private_bytes,
    public_bytes,
    quantize_weighted,
    sub_mod,
    wire_dtype,
)
from hebench.protections.secagg.consistency import check_signatures, survivor_statement
from hebench.protections.secagg.mask_prg import mask_stream
from hebench.protections.secagg.members import MemberList, advertisement
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.stages import Key, Stage

DIGEST_BYTES = 32  # sha256 of the global model (params.model_check)


UNTRUSTED = "do not trust this aggregator"


class SecAggClientRound:
    """One client in one round; ``run`` drives the stages over ``channel``.

    The active model needs ``identity`` (this client's signing key and the roster, from the trusted set-up) and
    ``population``, the number of clients the round was drawn for (public: the suite's; default: the roster's).
    """

    def __init__(
        self,
        index: int,
        channel: Channel,
        params: SecAggParams,
        meter: PhaseMeter,
        model_digest: bytes = b"",
        chunk_values: int = DEFAULT_CHUNK_VALUES,
        identity: ClientIdentity | None = None,
        population: int | None = None,
    ) -> None:
        self.index, self.channel, self.params, self.meter = index, channel, params, meter
        self.chunk_values = chunk_values  # values per streamed chunk of the masked upload
        self.model_digest = model_digest  # sha256 of the global model this client holds (params.model_check)
        if params.model_check and len(model_digest) != DIGEST_BYTES:
            raise PartyError(
                f"secagg: client {index} has no digest of its global model to check", "the link must supply one"
            )
        self.active = params.model == "active"
        if self.active and (identity is None or identity.index != index):
            raise PartyError(
                f"secagg: client {index} has no signing key of its own from the trusted set-up, which the active "
                "model needs",
                "the runtime hands each client its identity and the roster; or set params.model: honest-but-curious",
            )
        self.identity = identity
        self.population = population if population is not None else len(identity.roster) if identity else 0
        self.members: MemberList | None = None  # active: the member list this client was told
        self.view = b""  # active: its digest, sealed into every share
        self.declared_survivors: set[int] = set()  # every client the aggregator called a survivor this round
        self.declared_dropped: set[int] = set()  # ... or dropped

    def run(self, vector: np.ndarray, samples: int, meta: dict) -> None:
        self.advertise_keys(samples, meta)
        self.share_keys()
        self.masked_upload(vector)
        self.unmask()

    def advertise_keys(self, samples: int, meta: dict) -> None:
        with self.meter.phase(Stage.ADVERTISE_KEYS):
            self.share_key, self.mask_key = ec.generate_private_key(CURVE), ec.generate_private_key(CURVE)
            self.samples = samples
            parts: tuple[bytes, ...] = (public_bytes(self.share_key), public_bytes(self.mask_key))
            if self.active:
                assert self.identity is not None
                parts += (self.identity.sign(advertisement(self.index, samples, *parts)),)
            self.channel.send(
                Message(MessageKind.SA_KEYS, {**meta, Key.CLIENT: self.index, Key.SAMPLES: samples}, parts)
            )

    def share_keys(self) -> None:
        msg = self.channel.recv(MessageKind.SA_NEIGHBOURS)
        with self.meter.phase(Stage.SHARE_KEYS):
            threshold = self._take_members(msg) if self.active else self._take_neighbours(msg)
            self.seed = base64.urlsafe_b64encode(os.urandom(32))  # the self mask's seed
            count = len(self.neighbours) + 1
            seed_shares = create_shares(self.seed, threshold, count)
            key_shares = create_shares(private_bytes(self.mask_key), threshold, count)
            self.held = {self.index: (seed_shares[0], key_shares[0])}  # shares this client holds, by owner
            sealed = []
            for pos, j in enumerate(self.neighbours, start=1):
                plain = share_keys_plaintext_concat(self.index, j, seed_shares[pos], key_shares[pos])
                plain += self.view + (self.model_digest if self.params.model_check else b"")
                sealed.append(encrypt(generate_shared_key(self.share_key, self.pk_share[j]), plain))
            self.channel.send(Message(MessageKind.SA_SHARES, {Key.TO: self.neighbours}, tuple(sealed)))
        msg = self.channel.recv(MessageKind.SA_INBOX)
        with self.meter.phase(Stage.SHARE_KEYS):
            self.masked_with = []
            for j, blob in zip(msg.meta[Key.FROM], msg.parts, strict=True):
                j = int(j)
                if j not in self.pk_share:
                    raise PartyError(f"secagg: client {self.index} got shares from non-neighbour {j}", "relay bug")
                try:
                    opened = decrypt(generate_shared_key(self.share_key, self.pk_share[j]), blob)
                except InvalidToken:
                    raise PartyError(
                        f"secagg: client {self.index} got a share from {j} that its pairwise key does not open "
                        "(forged, or from another round); refused",
                        UNTRUSTED,
                    ) from None
                plain = self._unseal(j, opened)
                src, dst, seed_share, key_share = share_keys_plaintext_separate(plain)
                if (src, dst) != (j, self.index):
                    raise PartyError(f"secagg: a share from {j} is addressed {src}->{dst}", "the relay swapped shares")
                self.held[j] = (seed_share, key_share)
                self.masked_with.append(j)
            if len(self.masked_with) + 1 < threshold:  # as Flower's secaggplus_mod refuses it
                raise PartyError(
                    f"secagg: client {self.index} got shares from {len(self.masked_with)} of its "
                    f"{len(self.neighbours)} neighbours (threshold {threshold}): its upload would carry too few "
                    "pairwise masks (an aggregator withholding the others' shares, then asking for its seed's "
                    "shares, would read it); refused",
                    "too many neighbours were lost before sharing; if none were, do not trust this aggregator",
                )

    def _take_neighbours(self, msg: Message) -> int:
        """Honest-but-curious: the weight, neighbours and their keys as the aggregator tells them; the threshold
        for that many holders (lowered below t when told fewer neighbours: N1)."""
        self.weight = float(msg.meta[Key.WEIGHT])
        self.neighbours = [int(j) for j in msg.meta[Key.NEIGHBOURS]]
        keys = list(zip(msg.parts[0::2], msg.parts[1::2], strict=True))
        self.pk_share = {j: load_public(a) for j, (a, _) in zip(self.neighbours, keys, strict=True)}
        self.pk_mask = {j: load_public(b) for j, (_, b) in zip(self.neighbours, keys, strict=True)}
        count = len(self.neighbours) + 1
        threshold = min(self.params.reconstruction_threshold, count)
        if 2 * threshold <= count:
            raise PartyError(
                f"secagg: client {self.index} was given {len(self.neighbours)} neighbours: with threshold "
                f"{threshold} of {count} holders, a lying aggregator could collect both secrets of one client",
                "refused: the aggregator must give at most num_shares neighbours (and t > num_shares / 2)",
            )
        return threshold

    def _take_members(self, msg: Message) -> int:
        """Active: the signed member list, checked; the ring and the weight derived from it; threshold t."""
        assert self.identity is not None
        members = MemberList.from_message(msg)
        mine = members.by_index.get(self.index)
        own = (public_bytes(self.share_key), public_bytes(self.mask_key), self.samples)
        if mine is None or (mine.share_pk, mine.mask_pk, mine.samples) != own:
            raise PartyError(
                f"secagg: the member list sent to client {self.index} leaves out or changes its own keys", UNTRUSTED
            )
        forged = members.forged(self.identity.roster)
        if forged:
            raise PartyError(
                f"secagg: members {forged} of client {self.index}'s member list are not signed by their keys in the "
                "roster: the aggregator invented or changed them; refused before sharing anything",
                UNTRUSTED,
            )
        n, need = len(members.members), self.params.min_members(self.population)
        if not need <= n <= self.population:
            raise PartyError(
                f"secagg: client {self.index} was told {n} members for a round of {self.population} clients; it "
                f"takes part only with {need} to {self.population} (at least t = "
                f"{self.params.reconstruction_threshold} and more than half of the round): refused",
                "too many clients left before advertising their keys; if none did, do not trust this aggregator",
            )
        self.neighbours = members.ring(self.params)[self.index]
        t = self.params.reconstruction_threshold
        if not t <= len(self.neighbours) + 1 < 2 * t:  # never below t (N1), never so many that t of each leak
            raise PartyError(
                f"secagg: client {self.index} derived {len(self.neighbours)} neighbours, which threshold {t} "
                "cannot serve",
                "set num_shares and reconstruction_threshold as the suite validator asks",
            )
        self.weight = members.weights()[self.index]
        self.pk_share = {j: load_public(members.by_index[j].share_pk) for j in self.neighbours}
        self.pk_mask = {j: load_public(members.by_index[j].mask_pk) for j in self.neighbours}
        self.members, self.view = members, members.digest
        return t

    def _unseal(self, neighbour: int, plain: bytes) -> bytes:
        """A share's plaintext without what was sealed after it: the neighbour's model digest (checked against this
        client's own, ``params.model_check``) and, in the active model, its member list's digest (checked too).
        Both travel sealed with the pairwise key, so the aggregator can neither read nor forge them."""
        if self.params.model_check:
            theirs, plain = plain[-DIGEST_BYTES:], plain[:-DIGEST_BYTES]
            if theirs != self.model_digest:
                raise PartyError(
                    f"secagg: client {self.index} and its neighbour {neighbour} hold different global models "
                    f"({self.model_digest.hex()[:12]} vs {theirs.hex()[:12]}): the aggregator sent clients different "
                    "models (model inconsistency); round aborted",
                    "do not trust this aggregator; every client must receive the same aggregate",
                )
        if self.active:
            theirs, plain = plain[-len(self.view) :], plain[: -len(self.view)]
            if theirs != self.view:
                raise PartyError(
                    f"secagg: client {self.index} and its neighbour {neighbour} were told different member lists: "
                    "the aggregator split the round; refused",
                    UNTRUSTED,
                )
        return plain

    def masked_upload(self, vector: np.ndarray) -> None:
        with self.meter.phase(Stage.MASKED_UPLOAD):
            m, n, prg = self.params.modulus, len(vector), self.params.prg
            own = mask_stream(prg, self.seed, m)
            keys = {j: generate_shared_key(self.mask_key, self.pk_mask[j]) for j in self.masked_with}
            pairs = {j: mask_stream(prg, key, m) for j, key in keys.items()}
            for start, stop in spans(n, self.chunk_values):
                chunk = quantize_weighted(vector[start:stop], self.weight, self.params)
                masked = add_mod(chunk, own.take(stop - start), m)
                for j, pair in pairs.items():
                    step = pair.take(stop - start)
                    masked = add_mod(masked, step, m) if self.index < j else sub_mod(masked, step, m)
                blob = masked.astype(wire_dtype(m)).tobytes()
                del chunk, masked
                self.channel.send(Message(MessageKind.SA_MASKED_CHUNK, {"offset": start, "values": n}, (blob,)))
            self.channel.send(Message(MessageKind.SA_MASKED, {Key.CLIENT: self.index, Key.VALUES: n}))

    def unmask(self) -> None:
        """Answer the unmask request (active: after the consistency round)."""
        if self.active:
            self._sign_survivors()
            return self._reveal_signed()
        msg = self.channel.recv(MessageKind.SA_UNMASK)
        with self.meter.phase(Stage.UNMASK):
            survivors = {int(j) for j in msg.meta[Key.SURVIVORS]}
            dropped = {int(j) for j in msg.meta[Key.DROPPED]}
            if self.index in dropped:
                raise PartyError(
                    f"secagg: the aggregator says client {self.index} dropped, to the client itself",
                    "refused: revealing its own mask key share would help unmask its update",
                )
            both = (survivors | self.declared_survivors) & (dropped | self.declared_dropped)
            if both:
                raise PartyError(
                    f"secagg: the aggregator called {sorted(both)} both survivor and dropped in this round, "
                    "asking for both secrets",
                    "refused: that would unmask an individual update",
                )
            self.declared_survivors |= survivors
            self.declared_dropped |= dropped
            seeds_of = sorted(survivors & self.held.keys())
            keys_of = sorted(dropped & self.held.keys())
            self._reveal(seeds_of, keys_of)

    def _sign_survivors(self) -> None:
        """Active, consistency round: sign the survivor set told, under the member list's digest (once a round)."""
        assert self.identity is not None and self.members is not None
        msg = self.channel.recv(MessageKind.SA_SURVIVORS)
        with self.meter.phase(Stage.CONSISTENCY):
            survivors = sorted({int(j) for j in msg.meta[Key.SURVIVORS]})
            strangers = sorted(set(survivors) - set(self.members.indices))
            need = self.params.min_members(self.population)
            if self.index not in survivors or strangers or len(survivors) < need:
                raise PartyError(
                    f"secagg: client {self.index} was told survivors {survivors}: "
                    + (
                        "itself left out, though it uploaded"
                        if self.index not in survivors
                        else f"{strangers} are no members"
                        if strangers
                        else f"fewer than the {need} a round must keep"
                    )
                    + "; refused before revealing any share",
                    UNTRUSTED,
                )
            self.survivors = survivors
            signature = self.identity.sign(survivor_statement(self.view, survivors))
            self.channel.send(Message(MessageKind.SA_SIGNED, {Key.CLIENT: self.index}, (signature,)))

    def _reveal_signed(self) -> None:
        """Active: reveal shares only for the survivor set this client signed, with a quorum's signatures on it;
        the seed share of each survivor it holds, the mask key share of each neighbour that shared and did not
        upload."""
        assert self.identity is not None
        msg = self.channel.recv(MessageKind.SA_UNMASK)
        with self.meter.phase(Stage.UNMASK):
            told = sorted({int(j) for j in msg.meta[Key.SURVIVORS]})
            if told != self.survivors:
                raise PartyError(
                    f"secagg: client {self.index} signed survivors {self.survivors} and is asked to unmask for "
                    f"{told}; refused",
                    UNTRUSTED,
                )
            signers = [int(j) for j in msg.meta[Key.SIGNERS]]
            quorum = self.params.quorum(self.population)
            check_signatures(self.index, self.identity.roster, self.view, told, signers, msg.parts, quorum)
            survived = set(told)
            self._reveal(sorted(survived & self.held.keys()), sorted(self.held.keys() - survived))

    def _reveal(self, seeds_of: list[int], keys_of: list[int]) -> None:
        parts = tuple(self.held[j][0] for j in seeds_of) + tuple(self.held[j][1] for j in keys_of)
        self.channel.send(Message(MessageKind.SA_REVEAL, {Key.SEEDS_OF: seeds_of, Key.KEYS_OF: keys_of}, parts))
