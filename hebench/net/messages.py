"""Every kind of message hebench's parties exchange, as one enum.

A :class:`~hebench.net.transport.Message`'s ``kind`` is one of these. They are ``StrEnum`` members, so the wire
carries the same strings as before (``"sa_keys"``), transcripts and records stay readable, and a kind read off
the wire (a ``str``) compares equal to its member. Code names kinds only through this enum
(``tests/net/test_message_kinds.py`` fails on a bare string).
"""

from __future__ import annotations

from enum import StrEnum


class MessageKind(StrEnum):
    # any channel: who is calling, the end of a session, a peer's failure, an acknowledgement, a client leaving
    HELLO = "hello"
    DONE = "done"
    ERROR = "error"
    ACK = "ack"
    LEAVE = "leave"  # a client drops out of the round ({phase})

    # key sets: the key authority (or Flower's hub) pushes an epoch's set; a party asks for an epoch's set
    KEYS = "keys"
    EPOCH = "epoch"

    # a round, aggregator <-> client (or offload engine): the start, the upload, the aggregate
    TRAIN = "train"  # a training round begins
    MAP = "map"  # the selective mask agreement begins (round -1)
    UPDATE = "update"  # a whole upload in one message (secret sharing's share end; transcripts' joined uploads)
    UPDATE_CHUNK = "update_chunk"  # a ciphertext (or plain-adapter) chunk of an upload
    PLAIN_PART = "plain_part"  # a plaintext chunk of a selective upload
    UPDATE_END = "update_end"  # the end of a streamed upload
    AGGREGATE = "aggregate"  # the end of a training round's aggregate (its chunks come first)
    AGGREGATE_CHUNK = "aggregate_chunk"
    AGGREGATE_PLAIN = "aggregate_plain"  # a plaintext chunk of a selective aggregate
    MAP_SUM = "map_sum"  # the end of the mask agreement's summed score maps

    # offload, engine -> host: the decrypted aggregate
    RESULT = "result"  # the end of a training round's decrypted aggregate
    RESULT_CHUNK = "result_chunk"
    RESULT_PLAIN = "result_plain"
    MAP_RESULT = "map_result"  # the end of the mask agreement's decrypted sum

    # an engine (or the decryptor) as a service: encrypt or decrypt on request
    ENCRYPT = "encrypt"
    DECRYPT = "decrypt"
    CIPHERTEXTS = "ciphertexts"  # the answer to ENCRYPT
    PLAINTEXT = "plaintext"  # the engine's answer to DECRYPT
    DECRYPTED = "decrypted"  # the decryptor's answer to DECRYPT: the aggregate sealed to the clients

    # SecAgg+ (hebench.protections.secagg), in stage order
    SA_KEYS = "sa_keys"  # advertise keys: a client's two public keys
    SA_NEIGHBOURS = "sa_neighbours"  # the server: each client's neighbours and their keys (active: every member's)
    SA_SHARES = "sa_shares"  # share keys: a client's sealed shares for its neighbours
    SA_INBOX = "sa_inbox"  # the server: the sealed shares addressed to a client
    SA_MASKED_CHUNK = "sa_masked_chunk"  # masked upload, chunk by chunk
    SA_MASKED = "sa_masked"  # the end of a masked upload
    SA_SURVIVORS = "sa_survivors"  # the server (active model): the survivor set each survivor is asked to sign
    SA_SIGNED = "sa_signed"  # a client's signature on the survivor set it was told (active model)
    SA_UNMASK = "sa_unmask"  # the server: survivors and dropped clients whose shares to reveal (active: signatures)
    SA_REVEAL = "sa_reveal"  # a client's revealed shares

    # secret sharing (hebench.protections.sharing): client <-> share holders
    SHARE = "share"  # a share in one message
    SHARE_CHUNK = "share_chunk"
    SHARE_SUM = "share_sum"  # the end of a holder's sum of shares
    SHARE_SUM_CHUNK = "share_sum_chunk"
    SUM_DIGEST = "sum_digest"  # a client's digest of the coordinator's sum it rebuilt from, to every holder

    # Flower's run hub (hebench.runtime.flower): records and oracle vectors from the nodes
    RECORD = "record"
    ORACLE_UPDATE = "oracle_update"
    ORACLE_AGGREGATE = "oracle_aggregate"
    ORACLE_PART = "oracle_part"  # a slice of the next oracle record's vector
    REPLY = "reply"  # a Flower reply's content, as the server's transcript keeps it
