"""Self-describing byte containers for ciphertexts and key sets.

Layout: 4-byte magic, 4-byte big-endian header length, a JSON header, the
parts (their lengths are in the header), and a 16-byte BLAKE2b digest of all
that precedes it. Truncation and corruption are detected before any library
parses the payload.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

from hebench.errors import CiphertextError

DIGEST_BYTES = 16


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).digest()


def pack(magic: bytes, header: dict[str, Any], parts: list[bytes]) -> bytes:
    """Pack a header and byte parts into one checked container."""
    meta = dict(header, part_sizes=[len(p) for p in parts])
    head = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    body = b"".join([magic, struct.pack(">I", len(head)), head, *parts])
    return body + _digest(body)


def unpack(magic: bytes, blob: bytes, what: str) -> tuple[dict[str, Any], list[bytes]]:
    """Inverse of :func:`pack`; raises :class:`CiphertextError` on any damage."""
    fix = f"re-send the {what}; if it keeps failing, check that sender and receiver run the same hebench version"
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise CiphertextError(f"{what} must be bytes, got {type(blob).__name__}", fix)
    blob = bytes(blob)
    if len(blob) < len(magic) + 4 + DIGEST_BYTES or not blob.startswith(magic):
        raise CiphertextError(f"not a hebench {what} (bad magic or too short: {len(blob)} bytes)", fix)
    body, digest = blob[:-DIGEST_BYTES], blob[-DIGEST_BYTES:]
    if _digest(body) != digest:
        raise CiphertextError(f"{what} is corrupted or truncated (checksum mismatch, {len(blob)} bytes)", fix)
    (head_len,) = struct.unpack(">I", body[len(magic) : len(magic) + 4])
    start = len(magic) + 4
    header = json.loads(body[start : start + head_len])
    offset = start + head_len
    parts = []
    for size in header.pop("part_sizes"):
        parts.append(body[offset : offset + size])
        offset += size
    if offset != len(body):
        raise CiphertextError(f"{what} has {len(body) - offset} unexpected trailing bytes", fix)
    return header, parts
