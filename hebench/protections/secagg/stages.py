"""SecAgg+'s stages and the keys of their messages' metadata, as constants (as Flower's ``secaggplus_constants``).

The stages name each party's meter phases, so records carry them: the client's third stage is its masked upload,
the server's the collection of the masked uploads. The consistency round runs in the active model only. The
message kinds are :class:`hebench.net.messages.MessageKind`'s ``SA_*`` members.
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    ADVERTISE_KEYS = "advertise_keys"  # each client's two public keys; the server hands out neighbours (or members)
    SHARE_KEYS = "share_keys"  # sealed Shamir shares of each client's two secrets, relayed to its neighbours
    MASKED_UPLOAD = "masked_upload"  # the client: its masked, quantised, weighted update, chunk by chunk
    COLLECT_MASKED = "collect_masked"  # the server: the masked uploads into one running sum
    CONSISTENCY = "consistency"  # active model: each survivor signs the survivor set it was told
    UNMASK = "unmask"  # the survivors reveal shares; the server removes every mask from the sum


CLIENT_STAGES = (Stage.ADVERTISE_KEYS, Stage.SHARE_KEYS, Stage.MASKED_UPLOAD, Stage.CONSISTENCY, Stage.UNMASK)
SERVER_STAGES = (Stage.ADVERTISE_KEYS, Stage.SHARE_KEYS, Stage.COLLECT_MASKED, Stage.CONSISTENCY, Stage.UNMASK)


class Key(StrEnum):
    """Keys of the stages' metadata (the masked chunks' ``offset``/``values`` are the ring stream's own)."""

    CLIENT = "client"  # sa_keys, sa_masked, sa_signed: the sender's index
    SAMPLES = "samples"  # sa_keys: its sample count (its FedAvg weight follows); active sa_neighbours: each member's
    WEIGHT = "weight"  # sa_neighbours (honest-but-curious): the client's FedAvg weight over the round's members
    NEIGHBOURS = "neighbours"  # sa_neighbours (honest-but-curious): the neighbours whose public keys follow, in order
    MEMBERS = "members"  # sa_neighbours (active): every member, whose keys and signature follow, in order
    TO = "to"  # sa_shares: the neighbour each sealed share is for, in order
    FROM = "from"  # sa_inbox: the neighbour each sealed share came from, in order
    VALUES = "values"  # sa_masked: the upload's length
    SURVIVORS = "survivors"  # sa_survivors, sa_unmask: clients whose masked uploads are in the sum
    DROPPED = "dropped"  # sa_unmask (honest-but-curious): clients whose mask keys' shares to reveal
    SIGNERS = "signers"  # sa_unmask (active): the survivors whose signatures on the survivor set follow, in order
    SEEDS_OF = "seeds_of"  # sa_reveal: whose seed shares come first in the parts
    KEYS_OF = "keys_of"  # sa_reveal: whose key shares follow
