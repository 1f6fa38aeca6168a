"""TenSEAL (Microsoft SEAL) adapters: CKKS and BFV over fixed-point values."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np

from hebench.crypto.base import EncryptedVector
from hebench.crypto.lattice import BFVAdapter, CKKSAdapter
from hebench.errors import InsecureParametersError, ParameterError


class _TenSEALKeys:
    """Key handling shared by both TenSEAL schemes (mixin over an HEAdapter)."""

    _ctx: Any = None
    params: Any
    name: str

    def _new_context(self) -> Any:
        raise NotImplementedError

    def _check_security(self) -> None:
        bits = self._security_bits()  # type: ignore[attr-defined]
        if bits < 128:  # allow_insecure cannot help here
            raise InsecureParametersError(
                f"adapter '{self.name}' parameters give {bits} bits of security, below 128, and TenSEAL cannot run "
                "them even with allow_insecure: SEAL refuses such parameters and TenSEAL offers no way to turn "
                "that check off",
                "keep log Q within the standard's bound for the ring degree (a larger ring degree or a shorter "
                "coeff_mod_bits), or measure these parameters with pyfhel-ckks / pyfhel-bfv and allow_insecure: true",
            )

    def _after_load(self, ctx: Any) -> None:
        """Restore settings TenSEAL does not serialise."""

    def keygen(self) -> None:
        self._ctx = self._new_context()
        self._key_id = None

    @property
    def has_secret_key(self) -> bool:
        return self._ctx is not None and self._ctx.is_private()

    def _context(self) -> Any:
        if self._ctx is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        return self._ctx

    def _export_key_parts(self, secret: bool) -> dict[str, bytes]:
        ctx = self._context()
        lean = {"save_galois_keys": False, "save_relin_keys": False}
        parts = {"public_key": ctx.serialize(save_secret_key=False, **lean)}
        if secret:
            if not ctx.is_private():
                raise ParameterError("this key set holds no secret key", "export from the key authority")
            parts["secret_key"] = self._secret_key_only(ctx)
            parts["context"] = ctx.serialize(save_secret_key=True, **lean)
        return parts

    @staticmethod
    def _secret_key_only(ctx: Any) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "sk")
            ctx.secret_key().data.save(path)
            with open(path, "rb") as fh:
                return fh.read()

    def _import_key_parts(self, parts: dict[str, bytes]) -> None:
        import tenseal as ts

        ctx = ts.context_from(parts.get("context", parts["public_key"]), n_threads=self.params.threads)
        self._after_load(ctx)
        self._ctx = ctx

    def _chunk_to_bytes(self, chunk: Any) -> bytes:
        return chunk.serialize()


class TenSEALCKKS(_TenSEALKeys, CKKSAdapter):
    name = "tenseal-ckks"
    library = "tenseal"
    distribution = "tenseal"

    def _new_context(self) -> Any:
        import tenseal as ts

        p = self.params
        ctx = ts.context(
            ts.SCHEME_TYPE.CKKS,
            poly_modulus_degree=p.ring_degree,
            coeff_mod_bit_sizes=list(p.coeff_mod_bits),
            n_threads=p.threads,
        )
        self._after_load(ctx)
        return ctx

    def _after_load(self, ctx: Any) -> None:
        ctx.global_scale = 2.0**self.params.scale_bits

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        import tenseal as ts

        ctx = self._context()
        return [ts.ckks_vector(ctx, piece) for piece in pieces], {}

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        key = self._context().secret_key()  # chunks may be bound to another (public) context
        return np.concatenate([np.asarray(c.decrypt(key), dtype=np.float64) for c in enc.chunks])

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        return [c * scalar for c in enc.chunks], {}

    def _chunk_from_bytes(self, data: bytes) -> Any:
        import tenseal as ts

        return ts.ckks_vector_from(self._context(), data)


class TenSEALBFV(_TenSEALKeys, BFVAdapter):
    """BFV on integers: floats are quantised to fixed point; N slots per ciphertext."""

    name = "tenseal-bfv"
    library = "tenseal"
    distribution = "tenseal"

    def _new_context(self) -> Any:
        import tenseal as ts

        p = self.params
        return ts.context(
            ts.SCHEME_TYPE.BFV,
            poly_modulus_degree=p.ring_degree,
            plain_modulus=self.plain_modulus,
            coeff_mod_bit_sizes=list(p.coeff_mod_bits),
            n_threads=p.threads,
        )

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        import tenseal as ts

        ctx = self._context()
        return [ts.bfv_vector(ctx, self.codec.quantize(p).tolist()) for p in pieces], self.codec.fresh_state()

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        key = self._context().secret_key()
        ints = np.concatenate([np.asarray(c.decrypt(key), dtype=np.int64) for c in enc.chunks])
        return self.codec.dequantize(ints, enc.state)

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        factor, state = self.codec.weigh(scalar, enc.state)
        return [c * factor for c in enc.chunks], state

    def _chunk_from_bytes(self, data: bytes) -> Any:
        import tenseal as ts

        return ts.bfv_vector_from(self._context(), data)
