"""Security levels from the HomomorphicEncryption.org standard (Albrecht et al., 2018).

Table 1 (classical attacks, uniform ternary secret): the largest total
``log2 Q`` of the ciphertext modulus for each ring degree ``N`` that keeps
128, 192 and 256 bits of security. For Paillier, the modulus size maps to
security bits as in NIST SP 800-57 Part 1 (RSA-equivalent).
"""

from __future__ import annotations

MAX_LOG_Q: dict[int, dict[int, int]] = {
    1024: {128: 27, 192: 19, 256: 14},
    2048: {128: 54, 192: 37, 256: 29},
    4096: {128: 109, 192: 75, 256: 58},
    8192: {128: 218, 192: 152, 256: 118},
    16384: {128: 438, 192: 305, 256: 237},
    32768: {128: 881, 192: 611, 256: 476},
}

# NIST SP 800-57 Part 1 Rev. 5, Table 2: RSA modulus bits -> security bits.
RSA_MODULUS_SECURITY: tuple[tuple[int, int], ...] = ((15360, 256), (7680, 192), (3072, 128), (2048, 112), (1024, 80))

MIN_SECURITY_BITS = 128
MIN_PAILLIER_BITS = 2048  # 112-bit security; NIST's floor for use through 2030


def lattice_security_bits(ring_degree: int, log_q: int) -> int:
    """Security bits for ``(N, log Q)``: the standard's bracket (128, 192 or 256) where the table covers it.

    Above the 128-bit bound the table says nothing; there the level is extrapolated as the standard's
    estimates scale, in proportion to ``N / log Q`` (security ~ 128 * bound / log Q), rounded down: N = 4096
    with log Q = 110 gives 126 bits, not "below 80". Raises ``KeyError`` for ring degrees the table lacks.
    """
    bounds = MAX_LOG_Q[ring_degree]
    for bits in (256, 192, 128):
        if log_q <= bounds[bits]:
            return bits
    return (128 * bounds[128]) // log_q


def ring_degree_for(log_q: int, bits: int) -> int | None:
    """The smallest ring degree whose bound for ``bits`` of security admits ``log_q`` (None: none in the table)."""
    return next((n for n in sorted(MAX_LOG_Q) if MAX_LOG_Q[n][bits] >= log_q), None)


def paillier_security_bits(modulus_bits: int) -> int:
    """Security bits of a Paillier (RSA-type) modulus; 0 below 1024 bits."""
    for size, bits in RSA_MODULUS_SECURITY:
        if modulus_bits >= size:
            return bits
    return 0
