"""Party-process counts behind the contention note: local processes or pool workers; flower-sim's Ray workers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hebench.analysis.load_flags import party_processes


def _row(runtime: str, uses_engines: bool = False) -> SimpleNamespace:
    return SimpleNamespace(runtime=runtime, uses_engines=uses_engines)


@pytest.mark.parametrize(
    ("runtime", "suite", "clients", "want"),
    [
        ("local", {}, 3, 5),  # key authority, aggregator, a process per client
        ("local", {"runtime": {"hosting": "pool", "workers": 2}}, 1000, 4),
        ("local", {}, 1000, 4),  # auto: a pool above 8 clients, one worker per core
        ("flower-sim", {}, 1000, 4),  # hub, the simulation, one Ray worker per core (2 here)
        ("flower-sim", {"runtime": {"workers": 1}}, 1000, 3),
    ],
)
def test_party_processes_count_processes_not_virtual_clients(runtime, suite, clients, want):
    assert party_processes(_row(runtime), suite, clients, cores=2) == want  # type: ignore[arg-type]
