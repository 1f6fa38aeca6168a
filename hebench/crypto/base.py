"""The adapter interface every HE library implements, and its shared types."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from hebench.crypto import wire
from hebench.crypto.exact_weights import PreWeight
from hebench.crypto.params import AdapterParams
from hebench.crypto.security import MIN_SECURITY_BITS
from hebench.errors import CiphertextError, HebenchError, InsecureParametersError, PrecisionError

CIPHERTEXT_MAGIC = b"HEC1"
KEYS_MAGIC = b"HEK1"


@dataclass(frozen=True)
class SchemeInfo:
    """What an adapter's parameters give: the figures a report prints."""

    adapter: str
    library: str
    library_version: str
    scheme: str
    ring_degree: int | None
    log_q: int | None
    slots: int  # values per ciphertext
    precision: float  # max abs error of a weighted sum of up to max_summands vectors
    security_bits: int
    params: dict[str, Any]
    encryption: str = "public-key"  # how this party encrypts: "public-key", "seeded-symmetric" or "none"


@dataclass(frozen=True)
class EncryptedVector:
    """A float vector encrypted into one or more ciphertexts.

    ``state`` carries what decoding needs beyond the key (fixed-point scale,
    offsets); it travels in the clear and holds nothing secret.
    """

    adapter: str
    key_id: str
    length: int
    chunks: tuple[Any, ...]
    state: dict[str, Any] = field(default_factory=dict)


class HEAdapter(ABC):
    """One HE library behind one small interface.

    Lifecycle: construct with explicit parameters, then either ``keygen()``
    (key authority) or ``load_keys(blob)`` (anyone handed keys). A public key
    set (``export_keys(secret=False)``) allows encrypt, add and plaintext
    multiply; only a secret key set allows decrypt.
    """

    name: ClassVar[str]
    library: ClassVar[str]  # import name
    distribution: ClassVar[str]  # pip name
    scheme: ClassVar[str]
    params_type: ClassVar[type[AdapterParams]]

    def __init__(self, params: dict[str, Any] | AdapterParams | None = None) -> None:
        if isinstance(params, AdapterParams):
            params = params.model_dump()
        self.params = self.params_type.parse(self.name, params)
        self._check_security()
        self._key_id: str | None = None

    # -- keys -------------------------------------------------------------
    @abstractmethod
    def keygen(self) -> None:
        """Generate a fresh key set; this instance then holds the secret key."""

    @abstractmethod
    def _export_key_parts(self, secret: bool) -> dict[str, bytes]: ...

    @abstractmethod
    def _import_key_parts(self, parts: dict[str, bytes]) -> None: ...

    @property
    @abstractmethod
    def has_secret_key(self) -> bool: ...

    def export_keys(self, secret: bool) -> bytes:
        """Serialise the key set; ``secret=False`` strips every secret part."""
        parts = self._export_key_parts(secret)
        header = {
            "adapter": self.name,
            "key_id": self.key_id,
            "params": self.params.model_dump(mode="json"),
            "names": list(parts),
        }
        return wire.pack(KEYS_MAGIC, header, list(parts.values()))

    def load_keys(self, blob: bytes) -> None:
        header, parts = wire.unpack(KEYS_MAGIC, blob, "key set")
        wire.require(header, {"adapter": str, "key_id": str, "names": list}, "key set")
        if header["adapter"] != self.name:
            raise CiphertextError(
                f"key set is for adapter '{header['adapter']}', not '{self.name}'",
                "load keys generated for the same adapter",
            )
        names = header["names"]
        if len(names) != len(parts) or not all(isinstance(n, str) for n in names) or "public_key" not in names:
            raise CiphertextError("key set names do not match its parts", "re-export the key set")
        try:
            self._import_key_parts(dict(zip(names, parts, strict=True)))
        except HebenchError:
            raise
        except Exception as err:  # the library's own parse error
            raise CiphertextError(
                f"{self.library} could not load the key set: {err}", "re-export it from the key authority"
            ) from err
        self._key_id = header["key_id"]

    def secret_key_bytes(self) -> bytes:
        """The serialised secret key alone (for leak scans in security tests)."""
        return self._export_key_parts(secret=True)["secret_key"]

    @property
    def key_id(self) -> str:
        """Short fingerprint of the public key, fixed at key generation; ciphertexts carry it."""
        if self._key_id is None:
            public = self._export_key_parts(secret=False)["public_key"]
            self._key_id = hashlib.sha256(public).hexdigest()[:16]
        return self._key_id

    # -- arithmetic -------------------------------------------------------
    weighs_before_encryption: ClassVar[bool] = False  # True: ``encrypt(values, pre)`` applies a FedAvg weight

    def encrypt(self, values: np.ndarray, pre: PreWeight | None = None) -> EncryptedVector:
        """Encrypt a 1-D float vector of any length (chunked by ``slots``).

        ``pre``: this client's FedAvg weight, applied before quantisation (adapters that
        ``weighs_before_encryption``; :mod:`hebench.crypto.exact_weights`); the aggregator then adds with weight 1.
        """
        vec = np.asarray(values, dtype=np.float64).ravel()
        if not np.all(np.isfinite(vec)):
            raise PrecisionError("vector holds NaN or infinite values", "encrypt only finite values")
        self._check_range(vec)
        slots = self.slots
        pieces = [vec[i : i + slots] for i in range(0, max(len(vec), 1), slots)]
        if pre is None:
            chunks, state = self._encrypt_chunks(pieces)
        elif self.weighs_before_encryption:
            chunks, state = self._encrypt_weighted(pieces, pre)
        else:
            raise CiphertextError(
                f"adapter '{self.name}' cannot apply a weight before encryption",
                "the aggregator weighs this adapter's ciphertexts: send updates without a pre-weight",
            )
        return EncryptedVector(self.name, self.key_id, len(vec), tuple(chunks), state)

    def _encrypt_weighted(self, pieces: list[np.ndarray], pre: PreWeight) -> tuple[list[Any], dict[str, Any]]:
        raise NotImplementedError

    def decrypt(self, enc: EncryptedVector) -> np.ndarray:
        """Decrypt to a float64 vector of the original length."""
        self._check_mine(enc)
        if not self.has_secret_key:
            raise CiphertextError(
                f"adapter '{self.name}' holds only public keys and cannot decrypt",
                "decrypt where the secret key is held (the client in host-he, the engine in offload)",
            )
        return self._decrypt_chunks(enc)[: enc.length]

    def add(self, a: EncryptedVector, b: EncryptedVector) -> EncryptedVector:
        """Element-wise sum of two encrypted vectors of equal length."""
        self._check_mine(a)
        self._check_mine(b)
        if a.length != b.length:
            raise CiphertextError(
                f"cannot add encrypted vectors of lengths {a.length} and {b.length}",
                "add updates of the same model",
            )
        chunks, state = self._add_chunks(a, b)
        return replace(a, chunks=tuple(chunks), state=state)

    def multiply_plain(self, enc: EncryptedVector, scalar: float) -> EncryptedVector:
        """Multiply by a plaintext scalar (a FedAvg weight), non-negative."""
        self._check_mine(enc)
        if not np.isfinite(scalar) or scalar < 0:
            raise PrecisionError(f"plaintext weight {scalar} must be finite and >= 0", "use sample-count weights")
        chunks, state = self._multiply_chunks(enc, float(scalar))
        return replace(enc, chunks=tuple(chunks), state=state)

    # -- bytes ------------------------------------------------------------
    def serialize(self, enc: EncryptedVector) -> bytes:
        header = {"adapter": enc.adapter, "key_id": enc.key_id, "length": enc.length, "state": enc.state}
        return wire.pack(CIPHERTEXT_MAGIC, header, [self._chunk_to_bytes(c) for c in enc.chunks])

    def deserialize(self, blob: bytes) -> EncryptedVector:
        header, parts = wire.unpack(CIPHERTEXT_MAGIC, blob, "ciphertext")
        wire.require(header, {"adapter": str, "key_id": str, "length": int, "state": dict}, "ciphertext")
        enc = EncryptedVector(header["adapter"], header["key_id"], header["length"], (), header["state"])
        self._check_mine(enc)
        if enc.length < 0 or len(parts) != max(1, -(-enc.length // self.slots)):
            raise CiphertextError(
                f"ciphertext of {enc.length} values has {len(parts)} chunks of {self.slots} slots",
                "re-send it; sender and receiver must use the same adapter parameters",
            )
        self._check_state(enc.state)
        if not all(parts):  # libraries read an empty chunk as an empty ciphertext that fails only at decryption
            raise CiphertextError("ciphertext holds an empty chunk", "re-send it; it was cut short before sealing")
        try:
            chunks = tuple(self._chunk_from_bytes(p) for p in parts)
        except CiphertextError:
            raise
        except Exception as err:  # the library's own parse error
            raise CiphertextError(
                f"{self.library} could not parse a ciphertext chunk: {err}",
                "check that sender and receiver use the same adapter parameters",
            ) from err
        return replace(enc, chunks=chunks)

    # -- description ------------------------------------------------------
    @property
    @abstractmethod
    def slots(self) -> int:
        """Values per ciphertext."""

    @abstractmethod
    def info(self) -> SchemeInfo: ...

    @classmethod
    def library_version(cls) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(cls.distribution)
        except PackageNotFoundError:
            return "unknown"

    def _info(self, **fields: Any) -> SchemeInfo:
        return SchemeInfo(
            adapter=self.name,
            library=self.distribution,
            library_version=self.library_version(),
            scheme=self.scheme,
            params=self.params.model_dump(mode="json"),
            **fields,
        )

    # -- hooks --------------------------------------------------------------
    @abstractmethod
    def _security_bits(self) -> int: ...

    def _required_security(self) -> int:
        """Bits the parameters must give: their ``security_level`` where they have one (compact adapters), else 128."""
        return max(MIN_SECURITY_BITS, int(getattr(self.params, "security_level", MIN_SECURITY_BITS)))

    def _check_security(self) -> None:
        bits, wanted = self._security_bits(), self._required_security()
        if bits < wanted and not self.params.allow_insecure:
            requested = " (the requested security_level)" if wanted > MIN_SECURITY_BITS else ""
            raise InsecureParametersError(
                f"adapter '{self.name}' parameters give {bits or '<80'} bits of security, below {wanted}{requested}",
                self._security_fix(wanted),
            )

    def _security_fix(self, wanted: int) -> str:
        """How to reach ``wanted`` bits (adapters that know their ring say which ring degree)."""
        return (
            "choose a larger ring degree / smaller modulus (or a larger Paillier key), "
            "or set allow_insecure: true to measure them anyway"
        )

    def _check_state(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Raise :class:`CiphertextError` if a received ciphertext's decoding state is not one this adapter makes."""

    def _check_range(self, vec: np.ndarray) -> None:  # noqa: B027 - optional hook
        """Raise :class:`PrecisionError` if values exceed what the parameters encode."""

    def _check_mine(self, enc: EncryptedVector) -> None:
        if enc.adapter != self.name:
            raise CiphertextError(
                f"ciphertext was made by adapter '{enc.adapter}', not '{self.name}'",
                "use the same adapter on every party",
            )
        if enc.key_id != self.key_id:
            raise CiphertextError(
                f"ciphertext was encrypted under another key (key id {enc.key_id}, expected {self.key_id})",
                "make sure every party loads the key set of the current round from the key authority",
            )

    @abstractmethod
    def _encrypt_chunks(self, pieces: list[np.ndarray]) -> tuple[list[Any], dict[str, Any]]: ...

    @abstractmethod
    def _decrypt_chunks(self, enc: EncryptedVector) -> np.ndarray: ...

    @abstractmethod
    def _add_chunks(self, a: EncryptedVector, b: EncryptedVector) -> tuple[list[Any], dict[str, Any]]: ...

    @abstractmethod
    def _multiply_chunks(self, enc: EncryptedVector, scalar: float) -> tuple[list[Any], dict[str, Any]]: ...

    @abstractmethod
    def _chunk_to_bytes(self, chunk: Any) -> bytes: ...

    @abstractmethod
    def _chunk_from_bytes(self, data: bytes) -> Any: ...
