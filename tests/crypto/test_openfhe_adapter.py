"""OpenFHE's adapters where openfhe imports (CPython 3.10 / 3.12: `nox -s openfhe`); skipped elsewhere with why.

What the shared contract (tests/crypto/test_adapter_contract.py) does not reach: vectors spanning several
ciphertexts weighed as FedAvg weighs them, two key sets alive in one process (OpenFHE keeps process-wide
state), and hebench's own security check standing in for OpenFHE's, which the adapters switch off.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.registry import status
from hebench.errors import CiphertextError, InsecureParametersError

HERE = status("openfhe-ckks")
pytestmark = pytest.mark.skipif(
    not HERE.available,
    reason=f"OpenFHE cannot be tested on this Python ({HERE.reason}); `nox -s openfhe` runs these tests on "
    "CPython 3.12 or 3.10",
)
SCHEMES = ["openfhe-ckks", "openfhe-bfv"]


def _keyed(name: str, params: dict | None = None):
    adapter = create_adapter(name, params)
    adapter.keygen()
    return adapter


@pytest.mark.parametrize("name", SCHEMES)
def test_fedavg_of_three_clients_over_several_ciphertexts_within_stated_precision(name):
    secret = _keyed(name)
    public = load_adapter(secret.export_keys(secret=False))  # the aggregator's view: no secret key
    assert not public.has_secret_key
    rng = np.random.default_rng(1)
    n = 2 * secret.slots + 5  # three ciphertexts, the last one short
    xs = [rng.uniform(-1, 1, n) for _ in range(3)]
    weights = [480 / 1438, 479 / 1438, 479 / 1438]  # the quickstart's sample counts
    total = None
    for x, w in zip(xs, weights, strict=True):
        blob = public.serialize(public.encrypt(x))  # a client encrypts under the public key set
        term = public.multiply_plain(public.deserialize(blob), w)
        total = term if total is None else public.add(total, term)
    got = secret.decrypt(secret.deserialize(public.serialize(total)))
    want = sum(w * x for w, x in zip(weights, xs, strict=True))
    assert got.shape == (n,) and np.abs(got - want).max() <= secret.info().precision


@pytest.mark.parametrize("name", SCHEMES)
def test_two_key_sets_in_one_process_each_decrypt_their_own_and_refuse_the_others(name):
    a, b = _keyed(name), _keyed(name)
    x = np.linspace(-1, 1, 16)
    blob_a = a.serialize(a.encrypt(x))
    restored = load_adapter(a.export_keys(secret=True))  # loaded after b's keys were made
    np.testing.assert_allclose(restored.decrypt(restored.deserialize(blob_a)), x, atol=a.info().precision)
    np.testing.assert_allclose(b.decrypt(b.encrypt(x)), x, atol=b.info().precision)
    with pytest.raises(CiphertextError, match="another key"):
        b.deserialize(blob_a)


def test_a_ckks_ciphertext_is_refused_by_the_bfv_adapter():
    ckks = _keyed("openfhe-ckks")
    blob = ckks.serialize(ckks.encrypt(np.ones(4)))
    with pytest.raises(CiphertextError):
        _keyed("openfhe-bfv").deserialize(blob)


@pytest.mark.parametrize("name", SCHEMES)
def test_hebench_refuses_what_openfhes_own_check_would_have_and_allow_insecure_runs_it(name):
    # the adapters set SecurityLevel.HEStd_NotSet: the level is hebench's to check, before any key exists
    insecure = {"ring_degree": 4096, "coeff_mod_bits": [35, 25, 25, 25]}  # log Q 110 > 109 at N = 4096
    insecure.update({"frac_bits": 8, "plain_modulus_bits": 20} if name.endswith("bfv") else {"scale_bits": 25})
    with pytest.raises(InsecureParametersError):
        create_adapter(name, insecure)
    adapter = _keyed(name, {**insecure, "allow_insecure": True})
    assert adapter.info().security_bits == 126
    x = np.array([0.5, -1.25, 2.0])
    np.testing.assert_allclose(adapter.decrypt(adapter.encrypt(x)), x, atol=1e-2)


def test_compare_libraries_measures_both_schemes_through_the_cli():
    from typer.testing import CliRunner  # here, so that a CLI problem leaves the adapter tests standing

    from hebench.cli.main import app

    args = ["compare", "libraries", "--adapters", ",".join(SCHEMES), "--sizes", "64", "--repeats", "2"]
    result = CliRunner().invoke(app, [*args, "--budget", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["adapter"] for r in data["results"]] == SCHEMES and data["skipped"] == []
    assert all(r["error"]["within_precision"] for r in data["results"])
