"""Compact SEAL adapters: layout, headroom at its exact limit, quantisation bounds, seeded encryption."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.compact_params import SealBFVParams, bfv_layout
from hebench.crypto.quantize import Quantizer, pack, unpack
from hebench.crypto.security import lattice_security_bits
from hebench.errors import CiphertextError, InsecureParametersError, ParameterError, PrecisionError
from tests.conftest import INSTALLED

pytestmark = pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")


def keyed(name: str, **params):
    adapter = create_adapter(name, params)
    adapter.keygen()
    return adapter


@pytest.mark.parametrize("bits", [8, 12, 16])
@pytest.mark.parametrize("summands", [2, 64, 1000])
def test_layout_is_secure_and_its_headroom_exact(bits, summands):
    lay = bfv_layout(SealBFVParams(bits=bits, max_summands=summands))
    assert lattice_security_bits(lay.ring_degree, lay.modulus_bits) >= 128
    assert lay.max_weight_sum >= summands
    worst = lay.max_weight_sum * (2**bits - 2)  # every value at the top of its range
    assert worst < 2**lay.field_bits <= worst + (2**bits - 2)  # one more unit of weight would carry
    assert lay.plain_bits == lay.field_bits * lay.values_per_slot and lay.modulus_bits <= 60


def test_several_values_per_coefficient_when_the_plain_modulus_has_room():
    assert bfv_layout(SealBFVParams(bits=8)).values_per_slot >= 3
    assert bfv_layout(SealBFVParams(bits=16)).values_per_slot >= 2


def test_smaller_security_level_or_insecure_choice_is_explicit():
    assert create_adapter("seal-bfv", {"security_level": 192}).info().security_bits >= 192
    with pytest.raises(InsecureParametersError, match="below 128"):
        create_adapter("seal-bfv", {"ring_degree": 1024, "bits": 8, "max_summands": 2, "values_per_slot": 3})
    insecure = create_adapter(
        "seal-bfv", {"ring_degree": 1024, "bits": 8, "max_summands": 2, "values_per_slot": 3, "allow_insecure": True}
    )
    assert 0 < insecure.info().security_bits < 128  # estimated below the standard's 128-bit bound
    with pytest.raises(ParameterError, match="no secure BFV layout"):
        create_adapter("seal-bfv", {"bits": 30, "max_summands": 10**6})


@pytest.mark.parametrize("public_encryption", [False, True])
@pytest.mark.parametrize("name", ["seal-bfv", "seal-ckks"])
def test_overflow_is_refused_before_it_happens_at_the_exact_limit(name, public_encryption):
    adapter = keyed(name, bits=8, max_summands=5, public_encryption=public_encryption)
    public = load_adapter(adapter.export_keys(secret=False))
    limit = adapter.layout.max_weight_sum
    x = np.resize(np.array([1.0, -1.0, 0.5, -0.25]), adapter.slots + 5)  # the extremes of the range, two chunks
    encrypter = public if public_encryption else adapter  # public-key noise is the larger: sized for when allowed
    blob = encrypter.serialize(encrypter.encrypt(x))
    for weight in (limit - 1, limit):  # one below the limit and at it: exact
        total = public.multiply_plain(public.deserialize(blob), weight)
        got = adapter.decrypt(adapter.deserialize(public.serialize(total)))
        assert np.abs(got - weight * x).max() <= weight * adapter.info().precision
    with pytest.raises(PrecisionError, match="overflow"):
        public.multiply_plain(public.deserialize(blob), limit + 1)
    at_limit = public.multiply_plain(public.deserialize(blob), limit)
    with pytest.raises(PrecisionError, match="overflow"):
        public.add(at_limit, public.deserialize(blob))


def test_fedavg_of_as_many_clients_as_the_headroom_is_exact_and_one_more_is_refused():
    adapter = keyed("seal-bfv", bits=12, max_summands=6)
    public = load_adapter(adapter.export_keys(secret=False))
    limit = adapter.layout.max_weight_sum
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, 300) for _ in range(limit)]
    total = None
    for x in xs:
        term = public.multiply_plain(public.deserialize(adapter.serialize(adapter.encrypt(x))), 1 / limit)
        total = term if total is None else public.add(total, term)
    got = adapter.decrypt(total)
    assert np.abs(got - np.mean(xs, axis=0)).max() <= adapter.info().precision
    with pytest.raises(PrecisionError, match="denominator"):
        public.multiply_plain(public.deserialize(adapter.serialize(adapter.encrypt(xs[0]))), 1 / (limit + 1))


def test_weights_with_different_denominators_are_brought_to_a_common_one():
    adapter = keyed("seal-bfv", bits=16, max_summands=64)
    x, y = np.full(10, 0.5), np.full(10, -0.25)
    total = adapter.add(
        adapter.multiply_plain(adapter.encrypt(x), 1 / 3), adapter.multiply_plain(adapter.encrypt(y), 0.5)
    )
    assert total.state == {"den": 6, "weight_sum": 5}
    np.testing.assert_allclose(adapter.decrypt(total), x / 3 + y / 2, atol=adapter.info().precision)


@pytest.mark.parametrize("stochastic", [True, False])
def test_quantisation_error_is_within_the_stated_bound_on_a_known_distribution(stochastic):
    quant = Quantizer(bits=8, clip=2.0, stochastic=stochastic)
    rng = np.random.default_rng(7)
    x = np.clip(rng.normal(0, 0.7, 200_000), -2, 2)
    x[:2] = [-2.0, 2.0]
    ints = quant.quantize(x, rng)
    err = ints * quant.step - x
    assert np.abs(ints).max() <= quant.levels
    assert np.abs(err).max() <= quant.max_error
    assert np.abs(err).max() > 0.9 * quant.max_error  # the bound is tight, not loose
    if stochastic:  # unbiased: the mean error is within 5 standard errors of zero
        assert abs(err.mean()) < 5 * quant.step / np.sqrt(len(x))


def test_packing_round_trips_offset_fields():
    ints = np.random.default_rng(2).integers(-127, 128, 1000)
    coeffs = pack(ints, ring_degree=512, fields=3, field_bits=14, offset=127)
    assert coeffs.shape == (512,) and int(coeffs.max()) < 2**42
    np.testing.assert_array_equal(unpack(coeffs, 3, 14)[:1000] - 127, ints)


def test_key_holder_encrypts_seeded_symmetric_about_half_the_size_of_public_key():
    holder = keyed("seal-bfv", public_encryption=True)
    public = load_adapter(holder.export_keys(secret=False))
    assert holder.info().encryption == "seeded-symmetric" and public.info().encryption == "public-key"
    x = np.zeros(holder.slots)
    seeded, full = len(holder.serialize(holder.encrypt(x))), len(public.serialize(public.encrypt(x)))
    assert seeded < 0.6 * full
    np.testing.assert_allclose(holder.decrypt(public.encrypt(x)), x, atol=holder.info().precision)


def test_public_only_party_cannot_encrypt_with_symmetric_sized_parameters():
    public = load_adapter(keyed("seal-bfv").export_keys(secret=False))
    assert public.info().encryption == "none"
    with pytest.raises(CiphertextError, match="sized for symmetric"):
        public.encrypt(np.zeros(4))


def test_public_key_set_holds_no_secret_key_material():
    holder = keyed("seal-bfv")
    public = load_adapter(holder.export_keys(secret=False))
    secret = holder.secret_key_bytes()
    assert not public.has_secret_key and public._secret_bytes is None and public._secret is None
    held = b"".join(v for v in vars(public).values() if isinstance(v, bytes))
    assert secret not in held and secret[16:48] not in held


def test_a_16_bit_update_costs_at_most_one_and_a_half_float32_and_8_bit_less_than_one():
    for bits, ratio in ((16, 1.5), (8, 1.0)):
        adapter = keyed("seal-bfv", bits=bits, max_summands=64)
        x = np.random.default_rng(3).uniform(-1, 1, 4 * adapter.slots)
        assert len(adapter.serialize(adapter.encrypt(x))) < ratio * 4 * len(x)


def test_upload_and_aggregate_travel_zstd_compressed():
    from hebench.crypto import wire
    from hebench.crypto.base import CIPHERTEXT_MAGIC

    holder = keyed("seal-bfv")
    public = load_adapter(holder.export_keys(secret=False))
    upload = holder.serialize(holder.encrypt(np.zeros(10)))
    aggregate = public.serialize(public.add(public.deserialize(upload), public.deserialize(upload)))
    for blob in (upload, aggregate):
        _, parts = wire.unpack(CIPHERTEXT_MAGIC, blob, "ciphertext")
        assert parts and all(p[:2] == b"\x5e\xa1" and p[5] == 2 for p in parts)  # SEAL header, compression: zstd
    assert len(aggregate) > 1.5 * len(upload)  # the sum is no longer seeded: both polynomials travel back


def test_scratch_files_are_reused_not_accumulated():
    from hebench.crypto import seal_io

    holder = keyed("seal-bfv")
    holder.decrypt(holder.encrypt(np.zeros(3 * holder.slots)))
    before = list(seal_io._created)
    for _ in range(5):
        holder.decrypt(holder.encrypt(np.zeros(3 * holder.slots)))
    assert seal_io._created == before and all(p.startswith(seal_io._SCRATCH_DIR) for p in before)


def test_scratch_files_of_dead_processes_are_swept():
    import os
    import subprocess
    import sys

    from hebench.crypto import seal_io

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = f"{seal_io._SCRATCH_DIR}/{seal_io._PREFIX}{int(dead.stdout)}-test"
    open(stale, "wb").close()
    seal_io._sweep_stale()
    assert not os.path.exists(stale)
