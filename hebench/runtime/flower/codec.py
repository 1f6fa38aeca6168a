"""hebench updates inside Flower records: ciphertext as bytes in custom-``stype`` Arrays, never numpy.

An encrypted ArrayRecord holds one Array per streamed chunk (:mod:`hebench.fl.chunks`): the ciphertext
chunks (``c0``, ``c1``, …) and, for selective updates, the plaintext chunks (``p0``, …) in hebench's
checked wire format. Flower itself cuts every Array into ``FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE`` pieces
(5 MiB) on the wire, each far below gRPC's message limit, so an update of any size travels; hebench's
chunks keep each Array (and each ciphertext the strategy deserialises) one chunk long. ``Array.numpy()``
refuses these stypes, so a strategy cannot decode them by accident. A plaintext model (inside a client,
or a raw-mode run) is one float32 numpy Array.
"""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, RecordDict
from flwr.common.serde import recorddict_from_proto, recorddict_to_proto
from flwr.proto.recorddict_pb2 import Array as ArrayProto
from flwr.proto.recorddict_pb2 import ArrayRecord as ArrayRecordProto
from flwr.proto.recorddict_pb2 import RecordDict as RecordDictProto

from hebench.errors import CiphertextError

CIPHER_STYPE = "hebench.ciphertext"
PLAIN_STYPE = "hebench.plain"  # hebench's plain adapter: raw mode, and the clear part of selective updates
MODEL_KEY = "model"


def update_record(cipher: tuple[bytes, ...], plain: tuple[bytes, ...], cipher_stype: str = CIPHER_STYPE) -> ArrayRecord:
    record = ArrayRecord()
    for i, blob in enumerate(cipher):
        record[f"c{i}"] = Array(dtype="bytes", shape=(len(blob),), stype=cipher_stype, data=blob)
    for i, blob in enumerate(plain):
        record[f"p{i}"] = Array(dtype="bytes", shape=(len(blob),), stype=PLAIN_STYPE, data=blob)
    return record


def update_parts(record: ArrayRecord, cipher_stype: str = CIPHER_STYPE) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """(ciphertext blobs, plaintext blobs) of an update record; anything else is refused."""
    cipher, plain = [], []
    for key, array in record.items():
        if array.stype == cipher_stype and key.startswith("c"):
            cipher.append((int(key[1:]), array.data))
        elif array.stype == PLAIN_STYPE and key.startswith("p"):
            plain.append((int(key[1:]), array.data))
        else:
            raise CiphertextError(
                f"update array '{key}' has stype '{array.stype}', expected '{cipher_stype}'",
                "HE modes never accept plaintext updates: is every client running hebench's client mod?",
            )
    return tuple(b for _, b in sorted(cipher)), tuple(b for _, b in sorted(plain))


def model_record(vector: np.ndarray) -> ArrayRecord:
    return ArrayRecord({MODEL_KEY: Array(np.asarray(vector, dtype=np.float32))})


def model_vector(record: ArrayRecord) -> np.ndarray:
    return record[MODEL_KEY].numpy()


def is_encrypted(record: ArrayRecord) -> bool:
    return any(a.stype in (CIPHER_STYPE, PLAIN_STYPE) for a in record.values())


def payload_bytes(content: RecordDict) -> int:
    """Serialized size of a message's content (protobuf), without HTTP framing or TLS.

    Counted field by field, never serialising an Array's data: the same figure as
    ``recorddict_to_proto(content).ByteSize()`` without a second copy of the update in memory (nor
    protobuf's 2 GiB bound on one message, which a whole CKKS update of a 25 M-parameter model reaches).
    """
    total = 0
    for key, record in content.items():
        if isinstance(record, ArrayRecord):
            items = sum(_field(_array_item_bytes(k, a)) for k, a in record.items())
            size = RecordDictProto.Item(key=key).ByteSize() + _field(items)
        else:
            size = recorddict_to_proto(RecordDict({key: record})).items[0].ByteSize()
        total += _field(size)
    return total


def _array_item_bytes(key: str, array: Array) -> int:
    """Protobuf size of one ``ArrayRecord.Item``, its data counted, not copied."""
    head = ArrayProto(dtype=array.dtype, shape=list(array.shape), stype=array.stype).ByteSize()
    data = len(array.data)
    body = head + (_field(data) if data else 0)
    return ArrayRecordProto.Item(key=key).ByteSize() + _field(body)


def _field(size: int) -> int:
    """Bytes of a length-delimited field (tag below 16) whose payload is ``size`` bytes."""
    return 1 + _varint_bytes(size) + size


def _varint_bytes(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def content_bytes(content: RecordDict) -> bytes:
    """A message's content as it travels (protobuf), for transcripts."""
    return recorddict_to_proto(content).SerializeToString()


def content_from_bytes(data: bytes) -> RecordDict:
    proto = RecordDictProto()
    proto.ParseFromString(data)
    return recorddict_from_proto(proto)
