"""Compact adapters on ``tenseal.sealapi`` (Microsoft SEAL): what BFV and CKKS share.

Encryption: a party holding the secret key (host-he client, offload engine)
encrypts *symmetrically*; SEAL then saves the second polynomial as a seed, so a
fresh ciphertext is about half the size. A party with only the public key
encrypts with it (full-size, more noise) if the parameters were sized for it
(``public_encryption: true``), else it is refused. The aggregator needs neither:
it adds and multiplies by integers with the parameters alone.

Ciphertexts are one coefficient prime (no special prime: nothing is
relinearised or rotated) at the smallest secure ring degree; SEAL's zstd
compression is the wire format both ways. Weights are exact fractions
(:mod:`hebench.crypto.exact_weights`).
"""

from __future__ import annotations

from dataclasses import asdict
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from hebench.crypto import exact_weights, seal_io
from hebench.crypto.base import EncryptedVector, HEAdapter, SchemeInfo
from hebench.crypto.compact_params import CompactLayout, CompactParams
from hebench.crypto.security import MAX_LOG_Q, MIN_SECURITY_BITS, lattice_security_bits, ring_degree_for
from hebench.errors import CiphertextError, ParameterError, PrecisionError

SYMMETRIC = "seeded-symmetric"
PUBLIC = "public-key"
NONE = "none"

FLOAT32_EPS = 2.0**-23  # callers hand the result on as float32: a relative rounding of at most this


class SealAdapter(HEAdapter):
    library = "tenseal"
    distribution = "tenseal"
    params: CompactParams
    seal_scheme: ClassVar[str]  # "BFV" or "CKKS"

    def __init__(self, params: dict[str, Any] | CompactParams | None = None) -> None:
        super().__init__(params)
        self._secret: Any = None
        self._public: Any = None
        self._public_bytes: bytes | None = None
        self._secret_bytes: bytes | None = None
        self._rng = np.random.default_rng()

    # -- parameters -------------------------------------------------------
    @cached_property
    def layout(self) -> CompactLayout:
        return self._layout()

    def _layout(self) -> CompactLayout:
        raise NotImplementedError

    def _security_bits(self) -> int:
        n = self.layout.ring_degree
        if n not in MAX_LOG_Q:
            raise ParameterError(
                f"ring_degree {n} is not a power of two from 1024 to 32768", f"use one of {sorted(MAX_LOG_Q)}"
            )
        return lattice_security_bits(n, self.layout.modulus_bits)

    def _security_fix(self, wanted: int) -> str:
        bits, ring = self.layout.modulus_bits, ring_degree_for(self.layout.modulus_bits, wanted)
        where = f"ring_degree {ring}" if ring else "a ring degree beyond the standard's table"
        other = (
            "lower security_level" if wanted > MIN_SECURITY_BITS else "set allow_insecure: true to measure them anyway"
        )
        if ring is None:
            return f"{bits} modulus bits need {where} for {wanted}-bit security: lower bits or max_summands, or {other}"
        return (
            f"{bits} modulus bits need {where} for {wanted}-bit security: set ring_degree: {ring} or leave it unset "
            f"(the smallest secure one is chosen), or {other}"
        )

    def _plain_modulus(self) -> Any:
        return None

    @cached_property
    def context(self) -> Any:
        import tenseal.sealapi as seal

        parms = seal.EncryptionParameters(getattr(seal.SCHEME_TYPE, self.seal_scheme))
        parms.set_poly_modulus_degree(self.layout.ring_degree)
        parms.set_coeff_modulus(seal.CoeffModulus.Create(self.layout.ring_degree, [self.layout.modulus_bits]))
        if (plain := self._plain_modulus()) is not None:
            parms.set_plain_modulus(plain)
        ctx = seal.SEALContext(parms, True, seal.SEC_LEVEL_TYPE.NONE)  # security checked against our table
        if ctx.parameters_error_message() != "valid":
            raise ParameterError(f"SEAL refused the parameters: {ctx.parameters_error_message()}", "change them")
        return ctx

    @cached_property
    def evaluator(self) -> Any:
        import tenseal.sealapi as seal

        return seal.Evaluator(self.context)

    @cached_property
    def _seal_version(self) -> tuple[int, int]:
        import tenseal.sealapi as seal

        return seal_io.seal_version(seal_io.save_bytes(seal.Plaintext("1")))

    # -- keys ---------------------------------------------------------------
    def keygen(self) -> None:
        import tenseal.sealapi as seal

        keys = seal.KeyGenerator(self.context)
        public = seal.PublicKey()
        keys.create_public_key(public)
        secret = seal_io.save_bytes(keys.secret_key())
        self._import_key_parts({"public_key": seal_io.save_bytes(public), "secret_key": secret})
        self._key_id = None

    @property
    def has_secret_key(self) -> bool:
        return self._secret is not None

    def _export_key_parts(self, secret: bool) -> dict[str, bytes]:
        if self._public_bytes is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        parts = {"public_key": self._public_bytes}
        if secret:
            if self._secret_bytes is None:
                raise ParameterError("this key set holds no secret key", "export from the key authority")
            parts["secret_key"] = self._secret_bytes
        return parts

    def _import_key_parts(self, parts: dict[str, bytes]) -> None:
        import tenseal.sealapi as seal

        self._public = seal_io.load_from(seal.PublicKey(), parts["public_key"], self.context)
        self._public_bytes = parts["public_key"]
        self._secret = self._secret_bytes = None
        if "secret_key" in parts:
            self._secret = seal_io.load_from(seal.SecretKey(), parts["secret_key"], self.context)
            self._secret_bytes = parts["secret_key"]
        self.__dict__.pop("_encryptor", None)
        self.__dict__.pop("_decryptor", None)

    @property
    def encryption(self) -> str:
        """How this party encrypts: seeded symmetric (holds the secret key), public key, or not at all."""
        if self._secret is not None:
            return SYMMETRIC
        return PUBLIC if self.params.public_encryption and self._public is not None else NONE

    @cached_property
    def _encryptor(self) -> Any:
        import tenseal.sealapi as seal

        if self._secret is not None:
            return seal.Encryptor(self.context, self._secret)
        if self._public is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        return seal.Encryptor(self.context, self._public)

    @cached_property
    def _decryptor(self) -> Any:
        import tenseal.sealapi as seal

        return seal.Decryptor(self.context, self._secret)

    # -- ciphertexts ----------------------------------------------------------
    def _encrypt_plaintext(self, plain: Any) -> bytes:
        """Serialised ciphertext of one plaintext: seeded when this party holds the secret key."""
        import tenseal.sealapi as seal

        mode = self.encryption
        if mode == SYMMETRIC:
            return seal_io.save_bytes(self._encryptor.encrypt_symmetric(plain))
        if mode == NONE:
            raise CiphertextError(
                f"adapter '{self.name}' holds no secret key and its parameters are sized for symmetric encryption",
                "encrypt where the secret key is held (client or engine), or set public_encryption: true",
            )
        ct = seal.Ciphertext()
        self._encryptor.encrypt(plain, ct)
        return seal_io.save_bytes(ct)

    def _ciphertext(self, chunk: Any) -> Any:
        import tenseal.sealapi as seal

        return seal_io.load_from(seal.Ciphertext(), chunk, self.context) if isinstance(chunk, bytes) else chunk

    def _scaled(self, chunk: Any, factor: int) -> Any:
        """The chunk times a positive integer (a fresh ciphertext object)."""
        import tenseal.sealapi as seal

        ct = self._ciphertext(chunk)
        if factor == 1:
            return ct
        out = seal.Ciphertext()
        self.evaluator.multiply_plain(ct, self._integer_plaintext(factor, ct), out)
        return out

    def _integer_plaintext(self, factor: int, ct: Any) -> Any:
        raise NotImplementedError

    weighs_before_encryption = True  # FedAvg weights may be applied by the client (exact_weights.PreWeight)

    @property
    def levels(self) -> int:
        """Largest |value| in quantisation steps: 2^(bits-1) - 1 (the FedAvg pre-weights' unit)."""
        return 2 ** (self.params.bits - 1) - 1

    @property
    def offset_unit(self) -> int:
        """Headroom per summand, in steps, of the magnitude bound a state's ``offset`` tracks."""
        return self.levels

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        factor, state = exact_weights.weigh(scalar, enc.state, self.layout.max_weight_sum, self.offset_unit)
        return [self._scaled(c, factor) for c in enc.chunks], state

    def _add_chunks(self, a: EncryptedVector, b: EncryptedVector) -> tuple[list[Any], dict[str, Any]]:
        fa, fb, state = exact_weights.combine(a.state, b.state, self.layout.max_weight_sum, self.offset_unit)
        out = []
        for x, y in zip(a.chunks, b.chunks, strict=True):
            total = self._scaled(x, fa)
            self.evaluator.add_inplace(total, self._scaled(y, fb))
            out.append(total)
        return out, state

    def _decrypted(self, chunk: Any) -> Any:
        import tenseal.sealapi as seal

        plain = seal.Plaintext()
        self._decryptor.decrypt(self._ciphertext(chunk), plain)
        return plain

    def _chunk_to_bytes(self, chunk: Any) -> bytes:
        return chunk if isinstance(chunk, bytes) else seal_io.save_bytes(chunk)

    def _chunk_from_bytes(self, data: bytes) -> Any:
        return self._ciphertext(data)  # SEAL checks the ciphertext is valid for these parameters

    # -- description --------------------------------------------------------
    def _check_range(self, vec: np.ndarray) -> None:
        peak = float(np.max(np.abs(vec))) if vec.size else 0.0
        if peak > self.params.clip:
            raise PrecisionError(
                f"vector holds |x| = {peak:.4g}, above the range clip = {self.params.clip:g}",
                "raise the adapter's 'clip' parameter (a larger step: less precision), or scale the update",
            )

    def precision(self) -> float:
        raise NotImplementedError

    def info(self) -> SchemeInfo:
        return SchemeInfo(
            adapter=self.name,
            library=self.distribution,
            library_version=self.library_version(),
            scheme=self.scheme,
            ring_degree=self.layout.ring_degree,
            log_q=self.layout.modulus_bits,
            slots=self.slots,
            precision=self.precision(),
            security_bits=self._security_bits(),
            params={**self.params.model_dump(mode="json"), "layout": asdict(self.layout)},
            encryption=self.encryption,
        )
