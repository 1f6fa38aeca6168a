"""A run that fails after its first round writes a ``run_failed`` record, keeps what it wrote, and its
report says failed (fault injected in the runner's round collection; no party processes)."""

from __future__ import annotations

import pytest

from hebench.config import parse_suite
from hebench.errors import PartyError
from hebench.report.build import build_report
from hebench.results import read_records
from hebench.results.records import RoundRecord, RunFailedRecord
from hebench.runtime.runner import Runner

SUITE = {
    "name": "doomed",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 3},
    "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": "tenseal-ckks"}],
}


class _NoParties:
    """A runtime that starts nothing: the fault comes from the collection below."""

    name, supports_resume = "fake", True

    def session(self, suite, run_dir, note):
        from hebench.runtime.base import nothing_to_hold

        return nothing_to_hold()

    def configuration_fields(self):
        return {}

    def start(self, run, control_recv):
        class Started:
            def finish(self, write):
                pass

            def stop(self):
                pass

        return Started()


def _dies_after_round_one(error: BaseException):
    def collect(self, config, start, started, writer):
        writer.write(RoundRecord(config=config.label, round=0, accuracy=0.5))
        self._at = (config.label, 1)
        raise error

    return collect


@pytest.mark.parametrize(
    "error, kind",
    [
        (PartyError("client-1 exited with code -9", "see its log"), "PartyError"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
    ],
)
def test_a_run_failing_after_round_one_records_why_and_its_report_says_failed(tmp_path, monkeypatch, error, kind):
    monkeypatch.setattr(Runner, "_collect", _dies_after_round_one(error))
    out = tmp_path / "run"
    with pytest.raises(type(error)):
        Runner(parse_suite(SUITE), out, runtime=_NoParties()).run()

    records = read_records(out / "results.jsonl").records
    failed = [r for r in records if isinstance(r, RunFailedRecord)]
    assert len(failed) == 1 and failed[0].error == kind
    assert failed[0].config == "raw" and failed[0].round == 1
    assert [r.round for r in records if isinstance(r, RoundRecord)] == [0]  # what was written stays

    html = build_report([out], tmp_path / "r.html").read_text()
    assert "FAILED" in html and "This run failed in configuration &#39;raw&#39;, round 2" in html
    assert "failed after 1 of 3 rounds" in html
    assert "not run (the run stopped before it)" in html  # the CKKS configuration never started
