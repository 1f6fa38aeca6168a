"""Every wait is bounded: a party that never connects is named within seconds of the set-up deadline."""

from __future__ import annotations

import os
import signal
import time

import pytest

from hebench.config import parse_suite
from hebench.errors import PartyError
from hebench.results import read_records
from hebench.runtime.base import ConfigurationRun, Started
from hebench.runtime.local.processes import LocalRuntime
from hebench.runtime.runner import Runner

pytestmark = pytest.mark.slow  # a run that waits out its set-up deadline

SUITE = {
    "name": "deadline",
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1},
    "configurations": [{"mode": "raw"}],
    "measure": {"setup_timeout_s": 20, "timeout_s": 600},
}


class OneClientFrozen(LocalRuntime):
    """The local runtime, but client 2 is stopped (SIGSTOP) as soon as it starts: it never connects."""

    def __init__(self) -> None:
        self.frozen: list[int] = []

    def start(self, run: ConfigurationRun, control_recv) -> Started:
        started = super().start(run, control_recv)
        pid = started.parties["client-2"].pid  # type: ignore[attr-defined]
        os.kill(pid, signal.SIGSTOP)
        self.frozen.append(pid)
        stop = started.stop

        def thaw_and_stop() -> None:
            os.kill(pid, signal.SIGKILL)
            stop()

        started.stop = thaw_and_stop
        return started


def test_a_client_that_never_connects_is_named_within_its_deadline(tmp_path):
    runtime = OneClientFrozen()
    began = time.monotonic()
    with pytest.raises(PartyError) as err:
        Runner(parse_suite(dict(SUITE)), tmp_path, runtime=runtime).run()
    waited = time.monotonic() - began
    assert "client-2 did not finish set-up" in err.value.problem, err.value.problem
    assert "client-0" not in err.value.problem and "client-1" not in err.value.problem
    assert "setup_timeout_s" in err.value.fix
    # ended by the set-up deadline, not by the round budget
    assert waited < SUITE["measure"]["timeout_s"]
    setups = read_records(tmp_path / "results.jsonl", kind="party_setup").records
    assert {r.client for r in setups if r.role == "client"} == {0, 1}
