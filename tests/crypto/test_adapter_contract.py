"""Contract every installed adapter must meet."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import AdapterStatus, create_adapter, list_adapters, load_adapter
from hebench.errors import CiphertextError, ParameterError, PrecisionError
from tests.conftest import fast_params


def _where(status: AdapterStatus) -> str:
    return "; `nox -s openfhe` tests it on CPython 3.12 or 3.10" if status.library == "openfhe" else ""


# every adapter: one that does not import here is skipped with the registry's reason (OpenFHE on CPython 3.11:
# `nox -s openfhe` runs it on 3.12 or 3.10)
pytestmark = pytest.mark.parametrize(
    "name",
    [
        pytest.param(s.name, marks=pytest.mark.skipif(not s.available, reason=f"{s.name}: {s.reason}{_where(s)}"))
        for s in list_adapters()
    ],
)

_KEYS: dict[str, object] = {}


def keyed(name: str):
    """One key set per adapter per session (keygen is the slow part)."""
    if name not in _KEYS:
        adapter = create_adapter(name, fast_params(name))
        adapter.keygen()
        _KEYS[name] = adapter
    return _KEYS[name]


def vectors(n: int, count: int = 3, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, n).astype(np.float32) for _ in range(count)]


def test_round_trip_any_length(name):
    adapter = keyed(name)
    for n in (1, adapter.slots + 3):
        (x,) = vectors(n, 1)
        out = adapter.decrypt(adapter.encrypt(x))
        assert out.shape == (n,)
        np.testing.assert_allclose(out, x, atol=adapter.info().precision)


def test_weighted_sum_of_three_within_stated_precision(name):
    secret = keyed(name)
    public = load_adapter(secret.export_keys(secret=False))
    xs, weights = vectors(257), [0.2, 0.3, 0.5]
    encrypter = secret if public.info().encryption == "none" else public  # compact sets: the key holder encrypts
    total = None
    for x, w in zip(xs, weights, strict=True):
        term = public.multiply_plain(public.deserialize(encrypter.serialize(encrypter.encrypt(x))), w)
        total = term if total is None else public.add(total, term)
    got = secret.decrypt(secret.deserialize(public.serialize(total)))
    want = sum(w * x.astype(np.float64) for x, w in zip(xs, weights, strict=True))
    assert np.abs(got - want).max() <= secret.info().precision


def test_serialization_round_trip_is_stable(name):
    adapter = keyed(name)
    enc = adapter.encrypt(vectors(100, 1)[0])
    blob = adapter.serialize(enc)
    again = adapter.deserialize(blob)
    np.testing.assert_allclose(adapter.decrypt(again), adapter.decrypt(enc), atol=adapter.info().precision)
    assert again.length == 100 and again.key_id == adapter.key_id


def test_public_keys_cannot_decrypt_and_hold_no_secret(name):
    adapter = keyed(name)
    public_blob = adapter.export_keys(secret=False)
    public = load_adapter(public_blob)
    if name != "plain":
        assert not public.has_secret_key
        assert adapter.secret_key_bytes() not in public_blob
        with pytest.raises(CiphertextError, match="cannot decrypt"):
            public.decrypt(adapter.encrypt(vectors(4, 1)[0]))


def test_truncated_and_corrupted_bytes_are_refused(name):
    adapter = keyed(name)
    blob = adapter.serialize(adapter.encrypt(vectors(10, 1)[0]))
    with pytest.raises(CiphertextError, match="corrupted or truncated"):
        adapter.deserialize(blob[: len(blob) // 2])
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0xFF
    with pytest.raises(CiphertextError, match="corrupted or truncated"):
        adapter.deserialize(bytes(flipped))
    with pytest.raises(CiphertextError, match="not a hebench ciphertext"):
        adapter.deserialize(b"garbage")


def test_ciphertext_from_another_key_is_refused(name):
    if name == "plain":
        pytest.skip("plain has no keys")
    other = create_adapter(name, fast_params(name))
    other.keygen()
    blob = other.serialize(other.encrypt(vectors(4, 1)[0]))
    with pytest.raises(CiphertextError, match="another key"):
        keyed(name).deserialize(blob)


def test_values_beyond_range_or_not_finite_are_refused(name):
    adapter = keyed(name)
    with pytest.raises(PrecisionError, match="NaN"):
        adapter.encrypt(np.array([1.0, np.nan]))
    if name != "plain":
        with pytest.raises(PrecisionError, match="above"):
            adapter.encrypt(np.array([1e9], dtype=np.float64))


def test_unknown_parameter_is_refused(name):
    with pytest.raises(ParameterError, match="invalid parameters"):
        create_adapter(name, {"no_such_parameter": 1})


def test_info_reports_explicit_parameters(name):
    info = keyed(name).info()
    assert info.adapter == name and info.slots >= 1 and info.precision > 0
    if info.scheme in ("ckks", "bfv"):
        assert info.ring_degree and info.log_q and info.security_bits >= 128
