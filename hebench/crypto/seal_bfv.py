"""``seal-bfv``: compact BFV on ``tenseal.sealapi``: b-bit values, several per coefficient, exact headroom."""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto import exact_weights, seal_io
from hebench.crypto.base import EncryptedVector
from hebench.crypto.compact_params import CompactLayout, SealBFVParams, bfv_layout
from hebench.crypto.exact_weights import PreWeight, fresh_state, offset_of, pre_weighted_state
from hebench.crypto.quantize import Quantizer, pack, unpack
from hebench.crypto.seal_base import FLOAT32_EPS, SealAdapter


class SealBFV(SealAdapter):
    """Quantised values packed ``values_per_slot`` to a coefficient; the plain modulus is a power of two."""

    name = "seal-bfv"
    scheme = "bfv"
    seal_scheme = "BFV"
    params_type = SealBFVParams
    params: SealBFVParams

    def _layout(self) -> CompactLayout:
        return bfv_layout(self.params)

    def _plain_modulus(self) -> Any:
        import tenseal.sealapi as seal

        return seal.Modulus(1 << self.layout.plain_bits)

    @property
    def quantizer(self) -> Quantizer:
        return Quantizer(self.params.bits, self.params.clip, self.params.rounding == "stochastic")

    @property
    def slots(self) -> int:
        return self.layout.ring_degree * self.layout.values_per_slot

    def precision(self) -> float:
        """Max abs error of a weighted sum with weights totalling at most 1 (FedAvg), as float32."""
        return self.quantizer.max_error + self.params.clip * FLOAT32_EPS

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        return self._encrypt_ints(pieces, 1.0, self.quantizer.levels), fresh_state()

    def _encrypt_weighted(self, pieces: list[np.ndarray], pre: PreWeight) -> tuple[list[Any], dict[str, Any]]:
        """``pre.weight * x`` quantised at the usual step, clamped to ``pre.bound`` steps (an error below one step,
        as stochastic rounding's), stored offset by the bound."""
        state = pre_weighted_state(pre)
        exact_weights.weigh(1.0, state, self.layout.max_weight_sum, self.offset_unit)  # its headroom, checked
        return self._encrypt_ints(pieces, pre.weight, pre.bound), state

    def _encrypt_ints(self, pieces: list[np.ndarray], weight: float, bound: int) -> list[Any]:
        import tenseal.sealapi as seal

        lay, quant = self.layout, self.quantizer
        chunks = []
        for piece in pieces:
            ints = quant.quantize(piece * weight if weight != 1.0 else piece, self._rng, bound)
            coeffs = pack(ints, lay.ring_degree, lay.values_per_slot, lay.field_bits, bound)
            blob = seal_io.plaintext_bytes(coeffs, self._seal_version)
            plain = seal_io.load_from(seal.Plaintext(), blob, self.context)
            chunks.append(self._encrypt_plaintext(plain))
        return chunks

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        lay, quant = self.layout, self.quantizer
        den, offset = int(enc.state["den"]), offset_of(enc.state, quant.levels)
        out = []
        for chunk in enc.chunks:
            coeffs = seal_io.plaintext_coefficients(seal_io.save_bytes(self._decrypted(chunk)), lay.ring_degree)
            fields = unpack(coeffs, lay.values_per_slot, lay.field_bits) - offset
            out.append(fields.astype(np.float64) * (quant.step / den))
        return np.concatenate(out)

    def _integer_plaintext(self, factor: int, ct: Any) -> Any:
        import tenseal.sealapi as seal

        return seal.Plaintext(f"{factor:X}")
