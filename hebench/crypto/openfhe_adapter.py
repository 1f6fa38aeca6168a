"""OpenFHE (openfhe-python) adapters: CKKS and BFV.

openfhe-python publishes extensions for CPython 3.10 and 3.12 only; elsewhere
the registry reports these adapters unavailable with that reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto.base import EncryptedVector
from hebench.crypto.lattice import BFVAdapter, CKKSAdapter
from hebench.errors import ParameterError


def _ofhe() -> Any:
    import openfhe

    return openfhe


class _OpenFHEKeys:
    """Key handling shared by both OpenFHE schemes (mixin over an HEAdapter)."""

    _cc: Any = None
    _public: Any = None
    _secret: Any = None
    params: Any

    def _crypto_params(self) -> Any:
        raise NotImplementedError

    def keygen(self) -> None:
        fhe = _ofhe()
        cc = fhe.GenCryptoContext(self._crypto_params())
        cc.Enable(fhe.PKESchemeFeature.PKE)
        cc.Enable(fhe.PKESchemeFeature.LEVELEDSHE)
        keys = cc.KeyGen()
        self._cc, self._public, self._secret = cc, keys.publicKey, keys.secretKey
        self._key_id = None

    @property
    def has_secret_key(self) -> bool:
        return self._secret is not None

    def _context(self) -> Any:
        if self._cc is None:
            raise ParameterError("no keys yet", "call keygen() or load_keys() first")
        return self._cc

    def _export_key_parts(self, secret: bool) -> dict[str, bytes]:
        fhe = _ofhe()
        parts = {
            "context": bytes(fhe.Serialize(self._context(), fhe.BINARY)),
            "public_key": bytes(fhe.Serialize(self._public, fhe.BINARY)),
        }
        if secret:
            if self._secret is None:
                raise ParameterError("this key set holds no secret key", "export from the key authority")
            parts["secret_key"] = bytes(fhe.Serialize(self._secret, fhe.BINARY))
        return parts

    def _import_key_parts(self, parts: dict[str, bytes]) -> None:
        fhe = _ofhe()
        fhe.ClearEvalMultKeys()
        self._cc = fhe.DeserializeCryptoContextString(parts["context"], fhe.BINARY)
        self._public = fhe.DeserializePublicKeyString(parts["public_key"], fhe.BINARY)
        self._secret = (
            fhe.DeserializePrivateKeyString(parts["secret_key"], fhe.BINARY) if "secret_key" in parts else None
        )

    def _decrypt_plain(self, chunk: Any) -> Any:
        return self._context().Decrypt(chunk, self._secret)

    def _chunk_to_bytes(self, chunk: Any) -> bytes:
        fhe = _ofhe()
        return bytes(fhe.Serialize(chunk, fhe.BINARY))

    def _chunk_from_bytes(self, data: bytes) -> Any:
        fhe = _ofhe()
        return fhe.DeserializeCiphertextString(data, fhe.BINARY)


class OpenFHECKKS(_OpenFHEKeys, CKKSAdapter):
    name = "openfhe-ckks"
    library = "openfhe"
    distribution = "openfhe"

    def _crypto_params(self) -> Any:
        fhe = _ofhe()
        p = self.params
        cp = fhe.CCParamsCKKSRNS()
        cp.SetMultiplicativeDepth(len(p.coeff_mod_bits) - 2)
        cp.SetScalingModSize(p.scale_bits)
        cp.SetFirstModSize(p.coeff_mod_bits[0])
        cp.SetRingDim(p.ring_degree)
        cp.SetBatchSize(self.slots)
        cp.SetSecurityLevel(fhe.SecurityLevel.HEStd_NotSet)  # hebench checks the level itself
        return cp

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        cc = self._context()
        return [cc.Encrypt(self._public, cc.MakeCKKSPackedPlaintext(p.tolist())) for p in pieces], {}

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        out = []
        for chunk in enc.chunks:
            plain = self._decrypt_plain(chunk)
            plain.SetLength(self.slots)
            out.append(np.asarray(plain.GetRealPackedValue(), dtype=np.float64))
        return np.concatenate(out)

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        cc = self._context()
        return [cc.EvalMult(c, scalar) for c in enc.chunks], {}


class OpenFHEBFV(_OpenFHEKeys, BFVAdapter):
    name = "openfhe-bfv"
    library = "openfhe"
    distribution = "openfhe"

    def _crypto_params(self) -> Any:
        fhe = _ofhe()
        p = self.params
        cp = fhe.CCParamsBFVRNS()
        cp.SetPlaintextModulus(self.plain_modulus)
        cp.SetMultiplicativeDepth(1)
        cp.SetRingDim(p.ring_degree)
        cp.SetSecurityLevel(fhe.SecurityLevel.HEStd_NotSet)
        return cp

    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]:
        cc = self._context()
        chunks = [cc.Encrypt(self._public, cc.MakePackedPlaintext(self.codec.quantize(p).tolist())) for p in pieces]
        return chunks, self.codec.fresh_state()

    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray:
        out = []
        for chunk in enc.chunks:
            plain = self._decrypt_plain(chunk)
            plain.SetLength(self.slots)
            out.append(np.asarray(plain.GetPackedValue(), dtype=np.int64))
        return self.codec.dequantize(np.concatenate(out), enc.state)

    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]:
        factor, state = self.codec.weigh(scalar, enc.state)
        cc = self._context()
        plain = cc.MakePackedPlaintext([factor] * self.slots)
        return [cc.EvalMult(c, plain) for c in enc.chunks], state
