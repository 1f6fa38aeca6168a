"""The active model's consistency round (Bonawitz et al., CCS 2017, "ConsistencyCheck"), sized for SecAgg+.

After the masked uploads, each survivor signs the survivor set it was told, under the digest of its member list;
the aggregator hands every survivor the signatures it collected, and a client reveals shares only when it holds
valid signatures on exactly its own (member list, survivor set) from more than half of the clients the round was
drawn for (:meth:`SecAggParams.quorum`). Each honest client signs once per round, so two different survivor sets
(or two member lists) can never both gather more than half: an aggregator that tells some holders a client survived
and others that it dropped (a dropout lie) or splits the members into parts gets at most one view through, and that
view's sum covers more than half of the round.

SecAgg+'s own threshold t cannot serve as this quorum: t counts shares among one client's few neighbours, so two
disjoint groups of t signers exist in any round of more than 2t clients, each able to confirm a different view.
"""

from __future__ import annotations

import struct

from hebench.errors import PartyError
from hebench.fl.roster import Roster

SURVIVORS = b"hebench-secagg/survivors/v1\0"


def survivor_statement(digest: bytes, survivors: list[int]) -> bytes:
    """What a survivor signs: its member list's digest and the survivor set it was told."""
    ordered = sorted(set(survivors))
    return SURVIVORS + digest + struct.pack(f">I{len(ordered)}I", len(ordered), *ordered)


def check_signatures(
    client: int,
    roster: Roster,
    digest: bytes,
    survivors: list[int],
    signers: list[int],
    signatures: tuple[bytes, ...],
    quorum: int,
) -> None:
    """Raise ``PartyError`` unless ``signatures`` are valid on (``digest``, ``survivors``) from ``quorum`` or more
    distinct survivors (a single invalid one is a lie: refused as well)."""
    if len(signers) != len(signatures) or len(set(signers)) != len(signers):
        raise PartyError(
            f"secagg: client {client} got a malformed list of survivor-set signatures", "do not trust this aggregator"
        )
    outside = sorted(set(signers) - set(survivors))
    if outside:
        raise PartyError(
            f"secagg: client {client} got survivor-set signatures from {outside}, who are not survivors",
            "do not trust this aggregator",
        )
    statement = survivor_statement(digest, survivors)
    bad = [j for j, sig in zip(signers, signatures, strict=True) if not roster.verify(j, sig, statement)]
    if bad:
        raise PartyError(
            f"secagg: the survivor-set signatures of {bad} do not match the members and survivors client {client} "
            "was told: the aggregator told different clients different sets; refused before revealing any share",
            "do not trust this aggregator",
        )
    if len(signers) < quorum:
        raise PartyError(
            f"secagg: client {client} holds {len(signers)} matching survivor-set signatures, fewer than the "
            f"{quorum} (more than half of the round) it needs to reveal shares: refused",
            "too many clients dropped out before the consistency round; if none did, do not trust this aggregator",
        )
