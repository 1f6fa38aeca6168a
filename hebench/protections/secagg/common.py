"""What both sides of SecAgg+ agree on: the neighbour ring, key encodings, quantisation of the weighted update.

Built on Flower's primitives (``flwr.common.secure_aggregation``): ECDH + HKDF shared keys,
Fernet for shares in transit, Shamir sharing, stochastic quantisation.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.common.secure_aggregation.quantization import quantize

from hebench.errors import PartyError
from hebench.protections.secagg.params import SecAggParams

CURVE = ec.SECP384R1()  # Flower's SecAgg+ curve


def ring_neighbours(members: list[int], params: SecAggParams) -> dict[int, list[int]]:
    """Each member's neighbours: the ``neighbours(len(members))`` nearest on a ring of the sorted members."""
    return ring_over(sorted(members), params)


def ring_over(ordered: list[int], params: SecAggParams) -> dict[int, list[int]]:
    """Each member's neighbours: the ``neighbours(len(ordered))`` nearest on a ring in the order given."""
    n = len(ordered)
    half = min(params.neighbours(n), n - 1)
    left, right = half // 2 + half % 2, half // 2
    graph = {}
    for pos, member in enumerate(ordered):
        offsets = [*range(1, left + 1), *(-d for d in range(1, right + 1))]
        graph[member] = sorted({ordered[(pos + d) % n] for d in offsets} - {member})
    return graph


def public_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def private_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def load_public(blob: bytes) -> ec.EllipticCurvePublicKey:
    key = serialization.load_der_public_key(blob)
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise PartyError("a SecAgg public key is not an elliptic-curve key", "every client must run the same hebench")
    return key


def load_private(blob: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_der_private_key(blob, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise PartyError("a rebuilt SecAgg secret key is not an elliptic-curve key", "shares were corrupted")
    return key


def quantize_weighted(vector: np.ndarray, weight: float, params: SecAggParams) -> np.ndarray:
    """``weight * vector`` clipped to the range and stochastically quantised to [0, quantization_range]."""
    scaled = np.asarray(vector, dtype=np.float64) * weight
    q = quantize([scaled], params.clipping_range, params.quantization_range)[0]
    return q.astype(np.uint64)


def dequantize_sum(total: np.ndarray, summands: int, params: SecAggParams) -> np.ndarray:
    """The float sum behind the sum of ``summands`` quantised vectors (each offset by the clipping range)."""
    step = 2 * params.clipping_range / params.quantization_range
    return total.astype(np.float64) * step - summands * params.clipping_range


def check_headroom(summands: int, params: SecAggParams) -> None:
    """The modulus must hold the sum of ``summands`` quantised vectors without wrapping."""
    if summands * params.quantization_range >= params.modulus:
        raise PartyError(
            f"secagg: {summands} clients x quantization_range {params.quantization_range} overflow "
            f"modulus {params.modulus}",
            "raise params.modulus or lower params.quantization_range",
        )


def add_mod(a: np.ndarray, b: np.ndarray, modulus: int) -> np.ndarray:
    return (a + b) % np.uint64(modulus)


def sub_mod(a: np.ndarray, b: np.ndarray, modulus: int) -> np.ndarray:
    return (a + (np.uint64(modulus) - b % np.uint64(modulus))) % np.uint64(modulus)


def wire_dtype(modulus: int) -> type[np.unsignedinteger]:
    """The narrowest unsigned type that holds values below ``modulus`` (uint32 for Flower's default 2^32)."""
    return np.uint32 if modulus <= 2**32 else np.uint64
