"""Plaintext moduli for batched BFV: primes t with t = 1 (mod 2N)."""

from __future__ import annotations

from functools import cache

_WITNESSES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)  # deterministic below 3.3e24


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (covers every 64-bit modulus)."""
    if n < 2:
        return False
    for p in _WITNESSES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in _WITNESSES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@cache
def batching_prime(bits: int, ring_degree: int) -> int:
    """Largest prime below 2**bits that is 1 modulo 2N (SEAL's batching condition)."""
    step = 2 * ring_degree
    candidate = ((2**bits - 1) // step) * step + 1
    while candidate > step:
        if candidate < 2**bits and is_prime(candidate):
            return candidate
        candidate -= step
    raise ValueError(f"no {bits}-bit batching prime for N={ring_degree}")
