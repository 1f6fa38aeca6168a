"""A client's half of one SecAgg+ round (Bell et al. 2020; Flower's ``secaggplus_mod`` stages), over its
channel to the aggregator, which relays every message between clients.

1. advertise keys: two ECDH key pairs (one encrypts shares in transit, one seeds pairwise masks);
2. share keys: Shamir shares of the self-mask seed and of the mask secret key, one per neighbour,
   each encrypted for its neighbour;
3. masked upload: quantised weighted update + self mask +/- one pairwise mask per neighbour, mod M,
   streamed chunk by chunk (``sa_masked_chunk`` {offset, values}, then ``sa_masked``): every mask is
   expanded from its PRG chunk by chunk at the chunk's offset, so no model-sized mask is ever built;
4. unmask: for each neighbour the aggregator says survived, the share of its self-mask seed; for each
   that dropped, the share of its mask secret key; never both for the same client in one round.

A lying aggregator cannot collect both secrets of one client: this client refuses any request that
contradicts what the aggregator declared earlier in the round (a client once called dropped never gets
its seed share revealed, and the reverse), refuses to call itself dropped, and refuses a neighbour list
so long that t shares of each secret could come from disjoint holders (it needs 2t > holders; the suite
validator requires t > num_shares / 2 for the same reason). It also refuses to upload when fewer than t - 1
neighbours' shares reached it (as Flower's secaggplus_mod does): an aggregator withholding them would have it
mask with almost nobody, then rebuild its self mask from its seed's shares and read its update.
"""

from __future__ import annotations

import base64
import os

import numpy as np
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
from hebench.protections.secagg.mask_prg import mask_stream
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.stages import Key, Stage

DIGEST_BYTES = 32  # sha256 of the global model (params.model_check)


class SecAggClientRound:
    """One client in one round; ``run`` drives the four stages over ``channel``."""

    def __init__(
        self,
        index: int,
        channel: Channel,
        params: SecAggParams,
        meter: PhaseMeter,
        model_digest: bytes = b"",
        chunk_values: int = DEFAULT_CHUNK_VALUES,
    ) -> None:
        self.index, self.channel, self.params, self.meter = index, channel, params, meter
        self.chunk_values = chunk_values  # values per streamed chunk of the masked upload
        self.model_digest = model_digest  # sha256 of the global model this client holds (params.model_check)
        if params.model_check and len(model_digest) != DIGEST_BYTES:
            raise PartyError(
                f"secagg: client {index} has no digest of its global model to check", "the link must supply one"
            )
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
            parts = (public_bytes(self.share_key), public_bytes(self.mask_key))
            self.channel.send(
                Message(MessageKind.SA_KEYS, {**meta, Key.CLIENT: self.index, Key.SAMPLES: samples}, parts)
            )

    def share_keys(self) -> None:
        msg = self.channel.recv(MessageKind.SA_NEIGHBOURS)
        with self.meter.phase(Stage.SHARE_KEYS):
            self.weight = float(msg.meta[Key.WEIGHT])
            self.neighbours = [int(j) for j in msg.meta[Key.NEIGHBOURS]]
            keys = list(zip(msg.parts[0::2], msg.parts[1::2], strict=True))
            self.pk_share = {j: load_public(a) for j, (a, _) in zip(self.neighbours, keys, strict=True)}
            self.pk_mask = {j: load_public(b) for j, (_, b) in zip(self.neighbours, keys, strict=True)}
            self.seed = base64.urlsafe_b64encode(os.urandom(32))  # the self mask's seed
            count = len(self.neighbours) + 1
            threshold = min(self.params.reconstruction_threshold, count)
            if 2 * threshold <= count:
                raise PartyError(
                    f"secagg: client {self.index} was given {len(self.neighbours)} neighbours: with threshold "
                    f"{threshold} of {count} holders, a lying aggregator could collect both secrets of one client",
                    "refused: the aggregator must give at most num_shares neighbours (and t > num_shares / 2)",
                )
            seed_shares = create_shares(self.seed, threshold, count)
            key_shares = create_shares(private_bytes(self.mask_key), threshold, count)
            self.held = {self.index: (seed_shares[0], key_shares[0])}  # shares this client holds, by owner
            sealed = []
            for pos, j in enumerate(self.neighbours, start=1):
                plain = share_keys_plaintext_concat(self.index, j, seed_shares[pos], key_shares[pos])
                plain += self.model_digest if self.params.model_check else b""
                sealed.append(encrypt(generate_shared_key(self.share_key, self.pk_share[j]), plain))
            self.channel.send(Message(MessageKind.SA_SHARES, {Key.TO: self.neighbours}, tuple(sealed)))
        msg = self.channel.recv(MessageKind.SA_INBOX)
        with self.meter.phase(Stage.SHARE_KEYS):
            self.masked_with = []
            for j, blob in zip(msg.meta[Key.FROM], msg.parts, strict=True):
                j = int(j)
                if j not in self.pk_share:
                    raise PartyError(f"secagg: client {self.index} got shares from non-neighbour {j}", "relay bug")
                plain = decrypt(generate_shared_key(self.share_key, self.pk_share[j]), blob)
                if self.params.model_check:
                    plain = self._check_model(j, plain)
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

    def _check_model(self, neighbour: int, plain: bytes) -> bytes:
        """The share plaintext without the neighbour's model digest, after checking it equals this client's own:
        the digest travels sealed with the pairwise key, so the aggregator can neither read nor forge it."""
        theirs, plain = plain[-DIGEST_BYTES:], plain[:-DIGEST_BYTES]
        if theirs != self.model_digest:
            raise PartyError(
                f"secagg: client {self.index} and its neighbour {neighbour} hold different global models "
                f"({self.model_digest.hex()[:12]} vs {theirs.hex()[:12]}): the aggregator sent clients different "
                "models (model inconsistency); round aborted",
                "do not trust this aggregator; every client must receive the same aggregate",
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
        """Answer one unmask request; every request of the round is checked against all earlier ones."""
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
            parts = tuple(self.held[j][0] for j in seeds_of) + tuple(self.held[j][1] for j in keys_of)
            self.channel.send(Message(MessageKind.SA_REVEAL, {Key.SEEDS_OF: seeds_of, Key.KEYS_OF: keys_of}, parts))
