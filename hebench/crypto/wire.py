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
    try:
        header = json.loads(body[start : start + head_len])
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CiphertextError(f"{what} header is not JSON", fix) from None
    sizes = header.pop("part_sizes", None) if isinstance(header, dict) else None
    if not isinstance(sizes, list) or not all(type(n) is int and n >= 0 for n in sizes):
        raise CiphertextError(f"{what} header is malformed (no list of part sizes)", fix)
    offset = start + head_len
    parts = []
    for size in sizes:
        parts.append(body[offset : offset + size])
        offset += size
    if offset != len(body):
        raise CiphertextError(f"{what} has {len(body) - offset} unexpected trailing bytes", fix)
    return header, parts


def require(header: dict[str, Any], fields: dict[str, type | tuple[type, ...]], what: str) -> None:
    """Raise :class:`CiphertextError` unless ``header`` holds each field with the given type (bool is no int)."""
    for name, kind in fields.items():
        value = header.get(name)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise CiphertextError(
                f"{what} header has no valid '{name}'",
                "re-send it; if it keeps failing, check that sender and receiver run the same hebench version",
            )
