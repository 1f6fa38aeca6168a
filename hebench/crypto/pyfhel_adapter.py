"""Pyfhel (Microsoft SEAL via Cython) adapters: CKKS and BFV over fixed-point values."""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto.base import EncryptedVector
from hebench.crypto.lattice import BFVAdapter, CKKSAdapter
from hebench.errors import ParameterError

COMPRESSION = "zstd"  # SEAL's default; Pyfhel also offers "zlib" and "none"


class _PyfhelKeys:
    """Key handling shared by both Pyfhel schemes (mixin over an HEAdapter)."""

    _he: Any = None
    params: Any

    def _context_args(self) -> dict[str, Any]:
        raise NotImplementedError

    def _seal_security(self) -> int:
        """SEAL's own check: 128 normally, off (0) under allow_insecure (hebench has checked the table already)."""
        return 0 if self.params.allow_insecure else 128

    def keygen(self) -> None:
        from Pyfhel import Pyfhel

        he = Pyfhel()
        he.contextGen(**self._context_args())
        he.keyGen()
        self._he = he
        self._key_id = None

    @property
    def has_secret_key(self) -> bool:
        return self._he is not None and not self._he.is_secret_key_empty()

    def _lib(self) -> Any:
        if self._he is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        return self._he

    def _export_key_parts(self, secret: bool) -> dict[str, bytes]:
        he = self._lib()
        parts = {"context": he.to_bytes_context(), "public_key": he.to_bytes_public_key()}
        if secret:
            if he.is_secret_key_empty():
                raise ParameterError("this key set holds no secret key", "export from the key authority")
            parts["secret_key"] = he.to_bytes_secret_key()
        return parts

    def _import_key_parts(self, parts: dict[str, bytes]) -> None:
        from Pyfhel import Pyfhel

        he = Pyfhel()
        he.from_bytes_context(parts["context"])
        he.from_bytes_public_key(parts["public_key"])
        if "secret_key" in parts:
            he.from_bytes_secret_key(parts["secret_key"])
        self._he = he

    def _chunk_to_bytes(self, chunk: Any) -> bytes:
        return chunk.to_bytes(compr_mode=COMPRESSION)

    def _chunk_from_bytes(self, data: bytes) -> Any:
        from Pyfhel import PyCtxt

        return PyCtxt(pyfhel=self._lib(), bytestring=data)


class PyfhelCKKS(_PyfhelKeys, CKKSAdapter):
    name = "pyfhel-ckks"
    library = "Pyfhel"
    distribution = "Pyfhel"

    def _context_args(self) -> dict[str, Any]:
        p = self.params
        return {
            "scheme": "ckks",
            "n": p.ring_degree,
            "scale": 2**p.scale_bits,
            "qi_sizes": list(p.coeff_mod_bits),
            "sec": self._seal_security(),
        }

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        he = self._lib()
        return [he.encryptFrac(piece) for piece in pieces], {}

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        he = self._lib()
        return np.concatenate([he.decryptFrac(c)[: self.slots] for c in enc.chunks])

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        he = self._lib()
        out = []
        for chunk in enc.chunks:
            product = chunk * scalar
            he.rescale_to_next(product)
            product.round_scale()
            out.append(product)
        return out, {}


class PyfhelBFV(_PyfhelKeys, BFVAdapter):
    """BFV on integers: floats are quantised to fixed point; N slots per ciphertext."""

    name = "pyfhel-bfv"
    library = "Pyfhel"
    distribution = "Pyfhel"

    def _context_args(self) -> dict[str, Any]:
        p = self.params
        # sec=0: with a security level set, Pyfhel ignores qi_sizes for BFV and picks its own (smaller) chain,
        # so the log Q hebench reports would be wrong; hebench has already checked (N, log Q) against the standard
        return {
            "scheme": "bfv",
            "n": p.ring_degree,
            "t": self.plain_modulus,
            "qi_sizes": list(p.coeff_mod_bits),
            "sec": 0,
        }

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        he = self._lib()
        return [he.encryptInt(self.codec.quantize(p)) for p in pieces], self.codec.fresh_state()

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        he = self._lib()
        ints = np.concatenate([he.decryptInt(c)[: self.slots] for c in enc.chunks]).astype(np.int64)
        return self.codec.dequantize(ints, enc.state)

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        factor, state = self.codec.weigh(scalar, enc.state)
        he = self._lib()
        plain = he.encodeInt(np.full(self.slots, factor, dtype=np.int64))
        return [c * plain for c in enc.chunks], state
