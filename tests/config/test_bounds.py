"""Numbers that validate are numbers every party can use: seeds its generators take, waits its clocks hold."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest
import torch

from hebench.config import parse_suite
from hebench.config.base import LONGEST_WAIT_S, SEED_MAX
from hebench.errors import SuiteError

BASE = {"name": "t", "configurations": [{"mode": "raw"}]}


@pytest.mark.parametrize("override", ["seed=1.0e+26", f"seed={10**26}", "seed=-1", f"seed={SEED_MAX + 1}"])
def test_a_seed_no_generator_takes_is_refused(override):
    with pytest.raises(SuiteError, match="field 'seed': a seed is a whole number from 0 to 4294967295"):
        parse_suite(dict(BASE), "s.yaml", [override])


def test_the_fault_seed_is_bounded_as_the_suites():
    with pytest.raises(SuiteError, match=r"field 'faults\.seed'"):
        parse_suite(dict(BASE), "s.yaml", [f"faults.seed={2**40}"])


def test_the_largest_seed_works_in_every_generator_a_run_derives_from_it():
    suite = parse_suite(dict(BASE), "s.yaml", [f"seed={SEED_MAX}"])
    seed = suite.seed
    np.random.default_rng(seed)
    np.random.default_rng([seed, 10**6, 0xD1FF])
    np.random.RandomState(seed)
    torch.manual_seed(seed)
    torch.Generator().manual_seed(seed * 1_000_003 + 10**6 * 1009 + 10**6)  # a client's training seed, late rounds


@pytest.mark.parametrize(
    "override",
    [
        "measure.timeout_s=1e308",
        "measure.timeout_s=.inf",
        "measure.setup_timeout_s=1e308",
        "training.round_deadline_s=1e308",
        f"measure.timeout_s={LONGEST_WAIT_S + 1}",
    ],
)
def test_a_wait_beyond_a_week_is_refused(override):
    field = override.partition("=")[0]
    with pytest.raises(SuiteError, match=rf"field '{field}': .*at most 604800 \(a week\)"):
        parse_suite(dict(BASE), "s.yaml", [override])


def test_the_longest_wait_is_one_every_clock_a_party_uses_holds():
    suite = parse_suite(dict(BASE), "s.yaml", [f"measure.timeout_s={LONGEST_WAIT_S}"])
    assert suite.measure.timeout_s == LONGEST_WAIT_S < threading.TIMEOUT_MAX
    with socket.socket() as sock:
        sock.settimeout(suite.measure.timeout_s)
        with pytest.raises(OverflowError):  # what 1e308 did to every party
            sock.settimeout(1e308)
