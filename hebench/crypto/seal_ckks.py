"""``seal-ckks``: compact CKKS on ``tenseal.sealapi``: one prime, encoded at the level it is sent at."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from hebench.crypto import exact_weights
from hebench.crypto.base import EncryptedVector
from hebench.crypto.compact_params import CompactLayout, SealCKKSParams, ckks_layout
from hebench.crypto.exact_weights import PreWeight, fresh_state
from hebench.crypto.seal_base import FLOAT32_EPS, SealAdapter


class SealCKKS(SealAdapter):
    """N/2 real slots per ciphertext; the scale is chosen so the worst-case error is one b-bit step."""

    name = "seal-ckks"
    scheme = "ckks"
    seal_scheme = "CKKS"
    params_type = SealCKKSParams
    params: SealCKKSParams

    def _layout(self) -> CompactLayout:
        return ckks_layout(self.params)

    @property
    def slots(self) -> int:
        return self.layout.ring_degree // 2

    @cached_property
    def _encoder(self) -> Any:
        import tenseal.sealapi as seal

        return seal.CKKSEncoder(self.context)

    def precision(self) -> float:
        """Worst case of a weighted sum with weights totalling at most 1: noise and encoding, as float32."""
        lay = self.layout
        return lay.ring_degree * (lay.noise_per_weight + 0.5) / 2.0**lay.scale_bits + self.params.clip * FLOAT32_EPS

    @property
    def offset_unit(self) -> int:
        """A pre-weighted value is not clamped: ``|W x| / step <= bound + 1``, so a summand's unit is levels + 1
        (within the modulus' two bits of slack over ``max_summands * clip``)."""
        return self.levels + 1

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        return self._encode_all(pieces, 1.0), fresh_state()

    def _encrypt_weighted(self, pieces: list[np.ndarray], pre: PreWeight) -> tuple[list[Any], dict[str, Any]]:
        state = {"den": pre.summands, "weight_sum": 1, "offset": pre.bound + 1}  # |W x| < (bound + 1) steps
        exact_weights.weigh(1.0, state, self.layout.max_weight_sum, self.offset_unit)  # its headroom, checked
        return self._encode_all(pieces, pre.weight), state

    def _encode_all(self, pieces: list[np.ndarray], weight: float) -> list[Any]:
        import tenseal.sealapi as seal

        scale = 2.0**self.layout.scale_bits
        chunks = []
        for piece in pieces:
            plain = seal.Plaintext()
            self._encoder.encode((np.asarray(piece, dtype=np.float64) * weight).tolist(), scale, plain)
            chunks.append(self._encrypt_plaintext(plain))
        return chunks

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        den = int(enc.state["den"])
        out = [np.asarray(self._encoder.decode_double(self._decrypted(c)), dtype=np.float64) / den for c in enc.chunks]
        return np.concatenate(out)

    def _integer_plaintext(self, factor: int, ct: Any) -> Any:
        import tenseal.sealapi as seal

        plain = seal.Plaintext()
        self._encoder.encode(float(factor), ct.parms_id(), 1.0, plain)  # scale 1: the ciphertext's scale is kept
        return plain
