"""The secagg and secret-sharing modes in suites and attack plans."""

from __future__ import annotations

import pytest

from hebench.config import parse_suite
from hebench.errors import SuiteError
from hebench.inversion.campaign import clients_seen, view_of
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.sharing.params import SecretSharingParams


def suite(*configs, clients=4):
    return parse_suite({"name": "t", "data": {"clients": clients}, "configurations": list(configs)})


def test_mode_params_are_the_modes_not_the_plain_adapters():
    s = suite({"mode": "secagg", "params": {"num_shares": 3}}, {"mode": "secret-sharing", "params": {"aggregators": 3}})
    secagg, sharing = s.configurations
    assert isinstance(secagg.mode_params, SecAggParams) and secagg.adapter_params == {}
    assert isinstance(sharing.mode_params, SecretSharingParams) and sharing.mode_params.extra_aggregators == 2


@pytest.mark.parametrize(
    "params",
    [{"aggregators": 5}, {"bits": 64}, {"nonsense": 1}],
)
def test_bad_secret_sharing_params_fail_the_suite(params):
    with pytest.raises(SuiteError, match="secret-sharing"):
        suite({"mode": "secret-sharing", "params": params})


def test_threshold_above_shares_fails_the_suite():
    with pytest.raises(SuiteError, match="reconstruction_threshold"):
        suite({"mode": "secagg", "params": {"num_shares": 3, "reconstruction_threshold": 4}})


def test_the_attacker_of_secagg_sees_the_rounds_sum_and_of_sharing_nothing():
    s = suite({"mode": "secagg"}, {"mode": "secret-sharing"}, {"mode": "raw"}, clients=5)
    secagg, sharing, raw = s.configurations
    assert view_of(secagg) == ("raw", None) and clients_seen(s, secagg, 1) == 5
    assert view_of(sharing) == ("he", None)
    assert view_of(raw) == ("raw", None) and clients_seen(s, raw, 1) == 1
