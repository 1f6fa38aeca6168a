"""Read result folders and files into what a report shows, noting what is missing or damaged.

A :class:`Source` is read once and never changed afterwards: its records, the
summary rows of its configurations (with projections when the run's suite names
a calibration file) and the notes to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from hebench.analysis.summary import SummaryRow, summarize_run
from hebench.links.outcomes import on_their_links
from hebench.results import read_records
from hebench.results.calibration import read_calibration
from hebench.results.records import (
    AttackSummaryRecord,
    ConfigurationRecord,
    EnvironmentRecord,
    LibraryBenchmarkRecord,
    Record,
    RoundRecord,
    RunFailedRecord,
    RunRecord,
    TextAttackSummaryRecord,
)
from hebench.results.run_folder import RunFolder

R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class Source:
    """One results folder or JSON-lines file, as read."""

    path: Path
    records: tuple[Record, ...] = ()
    notes: tuple[str, ...] = ()  # what is missing or damaged, shown in the report
    rows: tuple[SummaryRow, ...] = ()  # one per configuration
    calibration: Mapping[str, Any] | None = field(default=None, repr=False)
    display: str | None = None  # a label set by the report when two sources share a folder name

    def of(self, cls: type[R]) -> list[R]:
        return [r for r in self.records if isinstance(r, cls)]

    @property
    def run(self) -> RunRecord | None:
        runs = self.of(RunRecord)
        return runs[-1] if runs else None

    @property
    def environment(self) -> Mapping[str, Any] | None:
        if self.run:
            return self.run.environment
        envs = self.of(EnvironmentRecord)
        return envs[-1].environment if envs else None

    @property
    def label(self) -> str:
        """The run's folder name (a file: its stem); two runs of one suite are told apart by their folders."""
        if self.display:
            return self.display
        return self.path.name if self.path.is_dir() else self.path.stem

    @property
    def suite_name(self) -> str | None:
        return str(self.run.suite.get("name")) if self.run else None

    @property
    def failure(self) -> RunFailedRecord | None:
        """Why the latest attempt of this run stopped early (None: it did not, or it was resumed since)."""
        latest: RunFailedRecord | None = None
        for rec in self.records:
            if isinstance(rec, RunRecord):
                latest = None
            elif isinstance(rec, RunFailedRecord):
                latest = rec
        return latest

    @property
    def libraries(self) -> list[Mapping[str, Any]]:
        return [r.result for r in self.of(LibraryBenchmarkRecord)]

    @property
    def attacks(self) -> list[AttackSummaryRecord]:
        return self.of(AttackSummaryRecord)

    @property
    def text_attacks(self) -> list[TextAttackSummaryRecord]:
        """A language-model run's text-leakage summaries (``hebench run``'s, or a ``text-attacks.jsonl``)."""
        return self.of(TextAttackSummaryRecord)


def load_source(path: Path) -> Source:
    """Read one source; everything unexpected becomes a note, never an exception."""
    file = RunFolder(path).results if path.is_dir() else path
    if not file.exists():
        return Source(path, notes=(f"{file} does not exist: nothing from this source is shown",))
    result = read_records(file)
    notes = [f"{result.skipped} line(s) of {file} could not be read: {p}" for p in result.problems[:3]]
    if not result.records:
        notes.append(f"{file} holds no hebench records")
    records, _ = on_their_links(result.records)  # emulation: model: round walls on the suite's link (said in
    source = Source(path, tuple(records))  # the report's links section)
    suite_offload = (source.run.suite.get("offload") or {}) if source.run else {}
    calibration = read_calibration(suite_offload.get("calibration"), RunFolder.of(file))
    if calibration.note:
        notes.append(calibration.note)
    selective = _selective_specs(source, notes)
    rows = summarize_run(source.records, calibration.data, selective) if source.of(ConfigurationRecord) else []
    rounds_wanted = (source.run.suite.get("training") or {}).get("rounds") if source.run else None
    failed = source.failure
    for row in rows:
        done = {r.round for r in source.of(RoundRecord) if r.config == row.config}
        if rounds_wanted and len(done) < rounds_wanted:
            why = "the run failed" if failed and failed.config == row.config else "interrupted?"
            notes.append(f"'{row.config}' completed {len(done)} of {rounds_wanted} rounds ({why})")
    return Source(path, source.records, tuple(notes), tuple(rows), calibration.data)


def _selective_specs(source: Source, notes: list[str]) -> dict[str, Mapping[str, Any] | None]:
    """Label → selective spec, from the run's stored suite, for configurations whose records lack it.

    A stored configuration that no longer validates is named in a note; its rows keep
    ``selective_known`` False and stay out of the overhead fit.
    """
    unrecorded = [c for c in source.of(ConfigurationRecord) if not c.selective_recorded]
    if not unrecorded or source.run is None:
        return {}
    from hebench.config import Configuration

    out: dict[str, Mapping[str, Any] | None] = {}
    for i, raw in enumerate(source.run.suite.get("configurations", [])):
        try:
            config = Configuration.model_validate(raw)
        except (ValidationError, ValueError) as err:
            name = raw.get("name") or "/".join(str(raw.get(k)) for k in ("mode", "adapter") if raw.get(k))
            reason = str(err).splitlines()[-1].strip() if str(err) else type(err).__name__
            notes.append(
                f"stored configuration #{i + 1} ({name}) does not validate ({reason}): its selective settings are "
                "unknown, so it is left out of the overhead fit"
            )
            continue
        out[config.label] = config.selective.model_dump(mode="json") if config.selective else None
    return out


def stored_labels(source: Source) -> list[str]:
    """Every configuration of the run, in suite order: those started, as their records name them, then the
    stored suite's configurations the run never reached (labelled by this version of hebench)."""
    recorded = list(dict.fromkeys(c.config for c in source.of(ConfigurationRecord)))
    if source.run is None:
        return recorded
    from hebench.config import Configuration

    rest = []
    for raw in source.run.suite.get("configurations", [])[len(recorded) :]:
        try:
            rest.append(Configuration.model_validate(raw).label)
        except (ValidationError, ValueError):
            rest.append(str(raw.get("name") or raw.get("mode", "?")))
    return recorded + rest
