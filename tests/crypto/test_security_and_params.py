"""Security levels from the standard, insecure parameters refused, headroom enforced."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import create_adapter
from hebench.crypto.primes import batching_prime, is_prime
from hebench.crypto.security import lattice_security_bits, paillier_security_bits
from hebench.errors import InsecureParametersError, ParameterError, PrecisionError
from tests.conftest import INSTALLED


def test_lattice_security_table():
    assert lattice_security_bits(8192, 218) == 128
    assert lattice_security_bits(8192, 219) == 127  # just above the 128-bit bound: just under 128, not "<80"
    assert lattice_security_bits(4096, 110) == 126
    assert lattice_security_bits(4096, 218) == 64
    assert lattice_security_bits(8192, 150) == 192
    assert lattice_security_bits(16384, 438) == 128
    assert lattice_security_bits(4096, 58) == 256


def test_paillier_security_table():
    assert paillier_security_bits(2048) == 112
    assert paillier_security_bits(3072) == 128
    assert paillier_security_bits(1024) == 80


@pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")
def test_modulus_above_standard_is_refused_and_tenseal_cannot_allow_it():
    params = {"ring_degree": 4096, "coeff_mod_bits": [60, 40, 40, 60]}  # log Q 200 > 109
    for allow in (False, True):  # SEAL would refuse at keygen, so allow_insecure cannot help
        with pytest.raises(InsecureParametersError, match="69 bits of security, below 128, and TenSEAL cannot") as info:
            create_adapter("tenseal-ckks", {**params, "allow_insecure": allow})
        assert "pyfhel" in info.value.fix


@pytest.mark.parametrize("name", ["pyfhel-ckks", "pyfhel-bfv"])
def test_allow_insecure_gives_a_runnable_pyfhel_set(name):
    if name not in INSTALLED:
        pytest.skip(f"{name} not installed")
    params = {"ring_degree": 4096, "coeff_mod_bits": [35, 25, 25, 25], "allow_insecure": True}  # log Q 110
    params.update({"frac_bits": 8, "plain_modulus_bits": 20} if name.endswith("bfv") else {"scale_bits": 25})
    adapter = create_adapter(name, params)
    assert adapter.info().security_bits == 126
    adapter.keygen()
    x = np.array([0.5, -1.25, 2.0])
    np.testing.assert_allclose(adapter.decrypt(adapter.encrypt(x)), x, atol=1e-2)


def test_small_paillier_key_is_refused_unless_allowed():
    with pytest.raises(InsecureParametersError, match="below 2048"):
        create_adapter("paillier", {"key_bits": 1024})
    assert create_adapter("paillier", {"key_bits": 1024, "allow_insecure": True}).info().security_bits == 80


@pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")
def test_inconsistent_ckks_chain_is_refused():
    with pytest.raises(ParameterError, match="does not match scale_bits"):
        create_adapter("tenseal-ckks", {"coeff_mod_bits": [60, 30, 60], "scale_bits": 40})


def test_unknown_ring_degree_is_refused():
    with pytest.raises(ParameterError, match="power of two"):
        create_adapter("tenseal-bfv", {"ring_degree": 3000})


def test_paillier_headroom_overflow_is_refused_not_wrapped():
    adapter = create_adapter("paillier", {"key_bits": 2048, "max_summands": 2})
    adapter.keygen()
    enc = adapter.encrypt(np.ones(4))
    total = adapter.add(adapter.multiply_plain(enc, 0.9), adapter.multiply_plain(enc, 0.9))
    np.testing.assert_allclose(adapter.decrypt(total), 1.8, atol=1e-4)
    with pytest.raises(PrecisionError, match="overflow"):
        adapter.add(total, adapter.multiply_plain(enc, 0.9))


def test_paillier_packing_none_is_one_value_per_ciphertext():
    naive = create_adapter("paillier", {"key_bits": 2048, "packing": "none"})
    packed = create_adapter("paillier", {"key_bits": 2048})
    assert naive.slots == 1 and packed.slots > 40


def test_paillier_negative_values_and_integer_weights_are_exact():
    adapter = create_adapter("paillier", {"key_bits": 2048})
    adapter.keygen()
    x = np.array([-7.5, 0.0, 3.25, -0.001])
    out = adapter.decrypt(adapter.add(adapter.multiply_plain(adapter.encrypt(x), 3), adapter.encrypt(x)))
    np.testing.assert_allclose(out, 4 * x, atol=1e-5)


def test_batching_prime():
    t = batching_prime(50, 8192)
    assert is_prime(t) and t % (2 * 8192) == 1 and t.bit_length() == 50
    assert not is_prime(2**61 + 1)


FIXED_POINT = ["paillier", "tenseal-bfv", "pyfhel-bfv"]


@pytest.mark.parametrize("name", FIXED_POINT)
def test_fixed_point_sum_at_the_headroom_limit_is_exact_and_one_more_is_refused(name):
    """Values at +clip and -clip weighted by exactly the largest allowed weight sum decrypt exactly."""
    if name not in INSTALLED:
        pytest.skip(f"{name} not installed")
    params = {"key_bits": 2048} if name == "paillier" else {"ring_degree": 4096, "coeff_mod_bits": [36, 36, 37]}
    adapter = create_adapter(name, params)
    adapter.keygen()
    limit = adapter.codec.max_weight_sum
    x = np.array([8.0, 8.0, 1.0, -8.0, 0.0])  # +clip twice: the case that used to wrap Paillier's slot
    enc = adapter.encrypt(x)
    np.testing.assert_allclose(adapter.decrypt(adapter.multiply_plain(enc, limit)), x * limit, rtol=0, atol=1e-3)
    np.testing.assert_allclose(
        adapter.decrypt(adapter.multiply_plain(enc, limit - 1)), x * (limit - 1), rtol=0, atol=1e-3
    )
    with pytest.raises(PrecisionError, match="overflow"):
        adapter.multiply_plain(enc, limit + 1)


def test_paillier_limit_is_below_the_slot_width():
    adapter = create_adapter("paillier", {"key_bits": 2048})
    p = adapter.params
    assert adapter.codec.max_weight_sum * 2**p.value_bits < 2**adapter.slot_bits


@pytest.mark.parametrize("name", ["tenseal-bfv", "pyfhel-bfv"])
def test_bfv_overflow_hint_names_what_moves_the_limit(name):
    if name not in INSTALLED:
        pytest.skip(f"{name} not installed")
    adapter = create_adapter(name, {"ring_degree": 4096, "coeff_mod_bits": [36, 36, 37]})
    adapter.keygen()
    with pytest.raises(PrecisionError) as info:
        adapter.multiply_plain(adapter.encrypt(np.ones(2)), adapter.codec.max_weight_sum + 1)
    assert "plain_modulus_bits" in info.value.fix and "max_summands does not" in info.value.fix


@pytest.mark.skipif("seal-ckks" not in INSTALLED, reason="TenSEAL not installed")
def test_a_requested_security_level_above_128_is_enforced_with_an_explicit_ring():
    """ring_degree 2048 with security_level 256 used to be accepted (only 128 was checked) and reported 192 bits."""
    params = {"ring_degree": 2048, "security_level": 256, "bits": 12, "max_summands": 4}
    with pytest.raises(InsecureParametersError, match=r"192 bits of security, below 256 \(the requested") as info:
        create_adapter("seal-ckks", params)
    assert "ring_degree: 4096" in info.value.fix
    assert create_adapter("seal-ckks", {**params, "ring_degree": 4096}).info().security_bits == 256
    assert create_adapter("seal-ckks", {**params, "security_level": 192}).info().security_bits == 192
    assert create_adapter("seal-ckks", {**params, "allow_insecure": True}).info().security_bits == 192  # honest
