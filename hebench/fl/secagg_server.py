"""The aggregator's half of a SecAgg+ round: relay keys and shares, collect masked vectors, unmask the sum.

It learns the sum of the survivors' quantised updates and nothing else: each upload carries its
self mask (removed only for survivors, from their seeds' shares) and its pairwise masks (which
cancel between survivors; a dropped client's are rebuilt from its mask key's shares). A client
that stops after sharing its keys is left out of the sum; the round goes on without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from flwr.common.secure_aggregation.crypto.shamir import combine_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError
from hebench.fl.aggregator import Aggregator, Collected
from hebench.fl.mask_prg import MASK_GENERATORS
from hebench.fl.meter import PhaseMeter
from hebench.fl.secagg_common import (
    add_mod,
    check_headroom,
    dequantize_sum,
    load_private,
    load_public,
    ring_neighbours,
    sub_mod,
    wire_dtype,
)
from hebench.modes.params import SecAggParams
from hebench.net.transport import Channel, Message
from hebench.selective.split import PLAIN


@dataclass(frozen=True)
class SecAggResult:
    """The unmasked FedAvg of the survivors, and what each sent."""

    average: np.ndarray  # float64: sum of the survivors' weighted updates / their weights' sum
    survivors: tuple[int, ...]
    dropped: tuple[int, ...]
    weights: dict[int, float]  # FedAvg weights over the survivors
    update_bytes: dict[int, int]  # bytes of each survivor's masked upload
    left: dict[int, str] = field(default_factory=dict)  # clients that said they left (hebench.faults): phase


def collect_secagg(channels: dict[int, Channel], params: SecAggParams, meter: PhaseMeter) -> SecAggResult:
    """Run the four stages with the clients on ``channels`` (each has been told to train)."""
    left: dict[int, str] = {}
    with meter.phase("advertise_keys"):
        keys = {}
        for i, ch in channels.items():
            msg = ch.recv()
            if msg.kind == "leave":  # left before the protocol began: not a member of this round
                left[i] = str(msg.meta.get("phase", "unknown"))
            elif msg.kind != "sa_keys":
                raise PartyError(f"expected 'sa_keys' from {ch.peer}, got '{msg.kind}'", "protocol mismatch")
            else:
                keys[i] = msg
    if not keys:
        raise PartyError("secagg: every client left before advertising its keys", "lower faults.dropout")
    members = sorted(keys)
    samples = {i: int(keys[i].meta["samples"]) for i in members}
    total = sum(samples.values())
    weights = {i: samples[i] / total for i in members}
    graph = ring_neighbours(members, params)
    check_headroom(len(members), params)
    with meter.phase("advertise_keys"):
        for i in members:
            parts = tuple(p for j in graph[i] for p in keys[j].parts)
            meta = {"weight": weights[i], "neighbours": graph[i]}
            channels[i].send(Message("sa_neighbours", meta, parts))
    with meter.phase("share_keys"):
        sealed = {i: channels[i].recv("sa_shares") for i in members}
        inbox: dict[int, list[tuple[int, bytes]]] = {i: [] for i in members}
        for i, msg in sealed.items():
            for j, blob in zip(msg.meta["to"], msg.parts, strict=True):
                if int(j) not in graph[i]:
                    raise PartyError(f"secagg: client {i} addressed a share to non-neighbour {j}", "protocol bug")
                inbox[int(j)].append((i, blob))
        for j in members:
            senders = [i for i, _ in inbox[j]]
            channels[j].send(Message("sa_inbox", {"from": senders}, tuple(b for _, b in inbox[j])))
    masked: dict[int, np.ndarray] = {}
    update_bytes: dict[int, int] = {}
    with meter.phase("collect_masked"):
        for i in members:
            try:
                msg = channels[i].recv()
            except PartyError:  # dropped out after sharing its keys: SecAgg's point is to go on without it
                continue
            if msg.kind == "leave":  # said so (hebench.faults): the same recovery
                left[i] = str(msg.meta.get("phase", "unknown"))
                continue
            if msg.kind != "sa_masked":
                raise PartyError(f"expected 'sa_masked' from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
            masked[i] = np.frombuffer(msg.parts[0], dtype=wire_dtype(params.modulus)).astype(np.uint64)
            update_bytes[i] = len(msg.parts[0])
    survivors = sorted(masked)
    dropped = sorted(set(members) - set(masked))
    if not survivors:
        raise PartyError("secagg: every client dropped out before its masked upload", "check the clients' errors")
    with meter.phase("unmask"):
        reveal = {}
        for i in survivors:
            channels[i].send(Message("sa_unmask", {"survivors": survivors, "dropped": dropped}))
        for i in survivors:
            msg = channels[i].recv()
            if msg.kind == "leave":  # left after its masked upload: its input counts, its shares do not come
                left[i] = str(msg.meta.get("phase", "unknown"))
                continue
            if msg.kind != "sa_reveal":
                raise PartyError(f"expected 'sa_reveal' from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
            reveal[i] = msg
        try:
            average = _unmask(masked, reveal, keys, graph, dropped, weights, params)
        except Unrecoverable as err:
            err.left = {**{i: "lost" for i in dropped}, **left}
            raise
    survivor_weight = sum(weights[i] for i in survivors)
    return SecAggResult(
        average=average,
        survivors=tuple(survivors),
        dropped=tuple(dropped),
        weights={i: weights[i] / survivor_weight for i in survivors},
        update_bytes=update_bytes,
        left=left,
    )


def _unmask(
    masked: dict[int, np.ndarray],
    reveal: dict[int, Message],
    keys: dict[int, Message],
    graph: dict[int, list[int]],
    dropped: list[int],
    weights: dict[int, float],
    params: SecAggParams,
) -> np.ndarray:
    """The survivors' sum with every mask removed, dequantised and divided by their weights."""
    m, mask = params.modulus, MASK_GENERATORS[params.prg]
    survivors = sorted(masked)
    n = len(next(iter(masked.values())))
    seed_shares: dict[int, list[bytes]] = {i: [] for i in survivors}
    key_shares: dict[int, list[bytes]] = {j: [] for j in dropped}
    for sender, msg in reveal.items():
        seeds_of, keys_of = [int(j) for j in msg.meta["seeds_of"]], [int(j) for j in msg.meta["keys_of"]]
        if not set(seeds_of) <= seed_shares.keys() or not set(keys_of) <= key_shares.keys():
            raise PartyError(f"secagg: client {sender} revealed shares nobody asked for", "protocol mismatch")
        for owner, share in zip(seeds_of, msg.parts[: len(seeds_of)], strict=True):
            seed_shares[owner].append(share)
        for owner, share in zip(keys_of, msg.parts[len(seeds_of) :], strict=True):
            key_shares[owner].append(share)
    need = {i: min(params.reconstruction_threshold, len(graph[i]) + 1) for i in graph}
    total = np.zeros(n, dtype=np.uint64)
    for i in survivors:
        total = add_mod(total, masked[i], m)
    for i in survivors:  # self masks: from the seed's shares
        total = sub_mod(total, mask(_rebuild(seed_shares[i], i, need[i]), m, n), m)
    for j in dropped:  # a dropped client's pairwise masks are still in its neighbours' uploads
        secret = load_private(_rebuild(key_shares[j], j, need[j]))
        for k in graph[j]:
            if k not in masked:
                continue
            pair = mask(generate_shared_key(secret, load_public(keys[k].parts[1])), m, n)
            total = sub_mod(total, pair, m) if k < j else add_mod(total, pair, m)
    summed = dequantize_sum(total, len(survivors), params)
    return summed / sum(weights[i] for i in survivors)


class Unrecoverable(PartyError):
    """Fewer shares of a dropped client's secret came back than the threshold: this round has no sum."""

    left: dict[int, str] = {}  # noqa: RUF012 - set per instance by collect_secagg


def _rebuild(shares: list[bytes], owner: int, threshold: int) -> bytes:
    if len(shares) < threshold:
        raise Unrecoverable(
            f"secagg: only {len(shares)} shares of client {owner}'s secret came back (threshold {threshold})",
            "too many clients dropped out: lower reconstruction_threshold or raise num_shares",
        )
    return combine_shares(shares)


def secagg_round(agg: Aggregator, chosen: list[int], adapter: HEAdapter) -> Collected:
    """The aggregator's half of a secagg round: the unmasked FedAvg of the survivors, as one plaintext blob."""
    params = agg.ctx.config.mode_params
    assert isinstance(params, SecAggParams)
    try:
        result = collect_secagg({i: agg.channels[i] for i in chosen}, params, agg.meter)
    except Unrecoverable as err:  # too many of a client's share holders left: the round fails, the run goes on
        return Collected((), 0, {}, {}, {}, left=dict(err.left), failed=err.problem)
    blob = PLAIN.serialize(PLAIN.encrypt(result.average.astype(np.float32)))
    meta = {"survivors": list(result.survivors), "dropped": list(result.dropped)}
    # clients not in the aggregate, with their phase (a survivor that left after its upload is recorded by its ack)
    gone = {i: result.left.get(i, "lost") for i in chosen if i not in result.survivors}
    return Collected((blob,), 0, result.weights, result.update_bytes, meta, left=gone)
