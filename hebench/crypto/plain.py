"""``plain``: real plaintext arithmetic in numpy, the raw-mode baseline.

Updates travel as float32, as an unencrypted FedAvg would send them; sums are
computed in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto.base import EncryptedVector, HEAdapter, SchemeInfo
from hebench.crypto.params import AdapterParams

CHUNK = 1 << 20


class PlainAdapter(HEAdapter):
    name = "plain"
    library = "numpy"
    distribution = "numpy"
    scheme = "none"
    params_type = AdapterParams

    def keygen(self) -> None:
        self._key_id = None

    @property
    def has_secret_key(self) -> bool:
        return True

    def _export_key_parts(self, secret: bool) -> dict[str, bytes]:
        return {"public_key": b"plain", **({"secret_key": b""} if secret else {})}

    def _import_key_parts(self, parts: dict[str, bytes]) -> None:
        pass

    @property
    def slots(self) -> int:
        return CHUNK

    def _security_bits(self) -> int:
        return 0

    def _check_security(self) -> None:
        """Plaintext offers no security and claims none."""

    def info(self) -> SchemeInfo:
        return self._info(ring_degree=None, log_q=None, slots=CHUNK, precision=1e-6, security_bits=0)

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        return [p.astype(np.float32) for p in pieces], {}

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        return np.concatenate([c.astype(np.float64) for c in enc.chunks])

    def _add_chunks(self, a: EncryptedVector, b: EncryptedVector) -> tuple[list[Any], dict[str, Any]]:
        return [x.astype(np.float64) + y for x, y in zip(a.chunks, b.chunks, strict=True)], {}

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        return [c.astype(np.float64) * scalar for c in enc.chunks], {}

    def _chunk_to_bytes(self, chunk: Any) -> bytes:
        return np.asarray(chunk, dtype="<f4").tobytes()

    def _chunk_from_bytes(self, data: bytes) -> Any:
        return np.frombuffer(data, dtype="<f4")
