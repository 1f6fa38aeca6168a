"""Paillier (python-paillier, ``phe``) with BatchCrypt-style packing.

Each plaintext holds ``slots`` quantised values, each in its own field of
``slot_bits`` bits with headroom for a weighted sum of ``max_summands``
updates. Values are stored with an offset so every field is non-negative
and no borrow crosses fields; the offset is removed at decryption using the
``weight_sum`` carried in the ciphertext's state. ``packing: none`` puts one
value in each ciphertext: the naive baseline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto.base import EncryptedVector, HEAdapter, SchemeInfo
from hebench.crypto.fixed_point import FixedPointCodec, headroom_bits
from hebench.crypto.params import PaillierParams
from hebench.crypto.security import MIN_PAILLIER_BITS, paillier_security_bits
from hebench.errors import CiphertextError, InsecureParametersError, ParameterError


def _int_bytes(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 7) // 8 or 1, "big")


class PaillierAdapter(HEAdapter):
    name = "paillier"
    library = "phe"
    distribution = "phe"
    scheme = "paillier"
    params_type = PaillierParams
    params: PaillierParams

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(params)
        p = self.params
        if p.packing not in ("batch", "none"):
            raise ParameterError(f"unknown Paillier packing '{p.packing}'", "use packing: batch or packing: none")
        self.slot_bits = p.value_bits + headroom_bits(p)
        per_ct = (p.key_bits - 2) // self.slot_bits
        if per_ct < 1:
            raise ParameterError(
                f"a Paillier slot needs {self.slot_bits} bits, more than the {p.key_bits}-bit key holds",
                "lower frac_bits, weight_bits or max_summands, or raise key_bits",
            )
        self._slots = per_ct if p.packing == "batch" else 1
        # a stored value (quantised + offset) lies in [0, 2**value_bits] inclusive (x = +clip reaches the top),
        # so W summands stay below 2**slot_bits only while W * 2**value_bits < 2**slot_bits
        self.codec = FixedPointCodec(p, max_weight_sum=2 ** (self.slot_bits - p.value_bits) - 1)
        self._public: Any = None
        self._private: Any = None

    # keys
    def keygen(self) -> None:
        from phe import paillier

        self._public, self._private = paillier.generate_paillier_keypair(n_length=self.params.key_bits)
        self._key_id = None

    @property
    def has_secret_key(self) -> bool:
        return self._private is not None

    def _export_key_parts(self, secret: bool) -> dict[str, bytes]:
        if self._public is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        parts = {"public_key": _int_bytes(self._public.n)}
        if secret:
            if self._private is None:
                raise ParameterError("this key set holds no secret key", "export from the key authority")
            p_bytes = _int_bytes(self._private.p)
            parts["secret_key"] = len(p_bytes).to_bytes(4, "big") + p_bytes + _int_bytes(self._private.q)
        return parts

    def _import_key_parts(self, parts: dict[str, bytes]) -> None:
        from phe import paillier

        self._public = paillier.PaillierPublicKey(int.from_bytes(parts["public_key"], "big"))
        self._private = None
        if "secret_key" in parts:
            blob = parts["secret_key"]
            split = 4 + int.from_bytes(blob[:4], "big")
            p, q = int.from_bytes(blob[4:split], "big"), int.from_bytes(blob[split:], "big")
            self._private = paillier.PaillierPrivateKey(self._public, p, q)

    # description
    @property
    def slots(self) -> int:
        return self._slots

    def _security_bits(self) -> int:
        return paillier_security_bits(self.params.key_bits)

    def _check_security(self) -> None:
        if self.params.key_bits < MIN_PAILLIER_BITS and not self.params.allow_insecure:
            raise InsecureParametersError(
                f"Paillier key_bits = {self.params.key_bits} is below {MIN_PAILLIER_BITS}",
                "use key_bits >= 2048 (default 3072), or set allow_insecure: true to measure it anyway",
            )

    def info(self) -> SchemeInfo:
        return self._info(
            ring_degree=None,
            log_q=None,
            slots=self.slots,
            precision=self.codec.precision(),
            security_bits=self._security_bits(),
        )

    # arithmetic
    def _check_range(self, vec: np.ndarray) -> None:
        self.codec.check_range(vec)

    def _check_state(self, state: dict[str, Any]) -> None:
        self.codec.check_state(state)

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        if self._public is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        offset = 2 ** (self.params.value_bits - 1)
        bits = self.slot_bits
        chunks = []
        for piece in pieces:
            packed = 0
            for value in reversed((self.codec.quantize(piece) + offset).tolist()):
                packed = (packed << bits) | value
            chunks.append(self._public.raw_encrypt(packed))
        return chunks, self.codec.fresh_state()

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        bits, mask = self.slot_bits, (1 << self.slot_bits) - 1
        offset = enc.state["weight_sum"] * 2 ** (self.params.value_bits - 1)
        values: list[int] = []
        for chunk in enc.chunks:
            plain = self._private.raw_decrypt(chunk)
            values.extend(((plain >> (i * bits)) & mask) - offset for i in range(self.slots))
        return self.codec.dequantize(np.asarray(values, dtype=np.int64), enc.state)

    def _add_chunks(self, a: EncryptedVector, b: EncryptedVector) -> tuple[list[Any], dict[str, Any]]:
        state = self.codec.combine(a.state, b.state)
        nsquare = self._public.nsquare
        return [x * y % nsquare for x, y in zip(a.chunks, b.chunks, strict=True)], state

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        from phe.util import powmod

        factor, state = self.codec.weigh(scalar, enc.state)
        nsquare = self._public.nsquare
        return [powmod(c, factor, nsquare) for c in enc.chunks], state

    def _chunk_to_bytes(self, chunk: Any) -> bytes:
        return int(chunk).to_bytes((self._public.nsquare.bit_length() + 7) // 8, "big")

    def _chunk_from_bytes(self, data: bytes) -> Any:
        value = int.from_bytes(data, "big")
        if len(data) != (self._public.nsquare.bit_length() + 7) // 8 or not 0 < value < self._public.nsquare:
            raise CiphertextError("Paillier ciphertext has the wrong size for this key", "use the same key set")
        return value
