"""Bytes in and out of ``tenseal.sealapi`` objects, without per-value Python loops.

The binding's ``save``/``load`` take file paths, so objects cross through
reused scratch files in ``/dev/shm`` (memory-backed) where it exists.
Plaintexts are built and read in SEAL's own serialisation format with numpy:
the binding's encoders take Python lists, this takes an array. SEAL compresses
what it saves with zstd (it is built with it); that is the wire format.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import struct
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

SEAL_MAGIC = 0xA15E
_HEADER = struct.Struct("<HBBBBHQ")  # magic, header size, version major, minor, compression, reserved, total size
_COMPR_NONE, _COMPR_ZSTD = 0, 2
_SCRATCH_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
_pool: list[str] = []  # scratch files not in use, of this process
_created: list[str] = []
_owner = os.getpid()
_lock = threading.Lock()


_PREFIX = "hebench-seal-"


def _remove_scratch() -> None:
    if os.getpid() == _owner:
        for path in _created:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _sweep_stale() -> None:
    """Remove scratch files left by processes that were killed before their exit handlers ran."""
    for name in os.listdir(_SCRATCH_DIR):
        pid = name[len(_PREFIX) :].split("-", 1)[0]
        if not (name.startswith(_PREFIX) and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(_SCRATCH_DIR, name))
        except OSError:
            pass  # alive, owned by someone else


atexit.register(_remove_scratch)


@contextlib.contextmanager
def scratch_path() -> Iterator[str]:
    """A scratch file for one save/load (memory-backed where the OS offers /dev/shm).

    Files are reused (as many as calls run at once), removed at exit, and swept by the next
    process when their owner was killed first; a forked child never reuses its parent's.
    """
    global _owner
    with _lock:
        if os.getpid() != _owner:
            _owner, _pool[:], _created[:] = os.getpid(), [], []
        path = _pool.pop() if _pool else None
    if path is None:
        if not _created:
            _sweep_stale()
        fd, path = tempfile.mkstemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=_SCRATCH_DIR)
        os.close(fd)
        with _lock:
            _created.append(path)
    try:
        yield path
    finally:
        with _lock:
            _pool.append(path)


def save_bytes(obj: Any) -> bytes:
    """``obj.save(path)`` read back as bytes (ciphertexts, keys, plaintexts, parameters)."""
    with scratch_path() as path:
        obj.save(path)
        with open(path, "rb") as fh:
            return fh.read()


def load_from(obj: Any, data: bytes, *context: Any) -> Any:
    """``obj.load([context,] path)`` from bytes; returns ``obj``."""
    with scratch_path() as path:
        with open(path, "wb") as fh:
            fh.write(data)
        obj.load(*context, path)
    return obj


def _header(version: tuple[int, int], size: int) -> bytes:
    return _HEADER.pack(SEAL_MAGIC, _HEADER.size, version[0], version[1], _COMPR_NONE, 0, size)


def seal_version(sample: bytes) -> tuple[int, int]:
    """SEAL's serialisation version, read from any object it saved."""
    magic, _, major, minor, *_ = _HEADER.unpack_from(sample)
    if magic != SEAL_MAGIC:
        raise ValueError("not a SEAL object")
    return major, minor


def plaintext_bytes(coeffs: np.ndarray, version: tuple[int, int]) -> bytes:
    """A coefficient-form plaintext (parms_id zero, scale 1) in SEAL's uncompressed format."""
    data = np.ascontiguousarray(coeffs, dtype="<u8")
    inner = _header(version, _HEADER.size + 8 + data.nbytes) + struct.pack("<Q", data.size) + data.tobytes()
    body = bytes(32) + struct.pack("<Qd", data.size, 1.0) + inner
    return _header(version, _HEADER.size + len(body)) + body


def plaintext_coefficients(saved: bytes, count: int) -> np.ndarray:
    """The coefficients of a saved coefficient-form plaintext, zero-padded to ``count``."""
    _, head, _, _, compression, _, _ = _HEADER.unpack_from(saved)
    body = saved[head:]
    if compression == _COMPR_ZSTD:
        import zstandard

        body = zstandard.ZstdDecompressor().decompress(body, max_output_size=64 + 16 * count + 64)
    elif compression != _COMPR_NONE:
        raise ValueError(f"unsupported SEAL compression mode {compression}")
    inner = 32 + 16  # parms_id, coeff_count, scale
    _, inner_head, *_ = _HEADER.unpack_from(body, inner)
    (size,) = struct.unpack_from("<Q", body, inner + inner_head)
    values = np.frombuffer(body, dtype="<u8", count=size, offset=inner + inner_head + 8)
    out = np.zeros(count, dtype=np.uint64)
    out[: min(size, count)] = values[:count]
    return out
