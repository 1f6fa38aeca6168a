"""Read result folders and files into what a report shows, noting what is missing or damaged."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hebench.fl.summary import summarize_run
from hebench.results import read_records
from hebench.runtime.runner import RESULTS_FILE


@dataclass
class Source:
    """One results folder or JSON-lines file."""

    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what is missing or damaged, shown in the report

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == kind]

    @property
    def run(self) -> dict[str, Any] | None:
        runs = self.kind("run")
        return runs[-1] if runs else None

    @property
    def environment(self) -> dict[str, Any] | None:
        if self.run:
            return self.run.get("environment")
        envs = self.kind("environment")
        return envs[-1]["environment"] if envs else None

    @property
    def label(self) -> str:
        return self.run["suite"]["name"] if self.run and "suite" in self.run else self.path.stem

    def summary(self) -> list[dict[str, Any]]:
        return summarize_run(self.records) if self.kind("configuration") else []

    def selective_specs(self) -> dict[str, dict[str, Any] | None]:
        """Configuration label → its selective spec, from the suite in the run record."""
        from hebench.suite import Configuration

        out: dict[str, dict[str, Any] | None] = {}
        for raw in ((self.run or {}).get("suite") or {}).get("configurations", []):
            try:
                config = Configuration.model_validate(raw)
            except ValueError:
                continue
            out[config.label] = config.selective.model_dump() if config.selective else None
        return out

    @property
    def libraries(self) -> list[dict[str, Any]]:
        return [r["result"] for r in self.kind("library_benchmark") if "result" in r]

    @property
    def attacks(self) -> list[dict[str, Any]]:
        return self.kind("attack_summary")


def load_source(path: Path) -> Source:
    file = path / RESULTS_FILE if path.is_dir() else path
    source = Source(path)
    if not file.exists():
        source.notes.append(f"{file} does not exist: nothing from this source is shown")
        return source
    result = read_records(file)
    source.records = result.records
    if result.skipped:
        source.notes.append(f"{result.skipped} line(s) of {file} could not be read (interrupted write or other schema)")
    if not source.records:
        source.notes.append(f"{file} holds no hebench records")
    configs = {r["config"] for r in source.kind("configuration")}
    rounds_wanted = (source.run or {}).get("suite", {}).get("training", {}).get("rounds")
    for label in sorted(configs):
        done = {r["round"] for r in source.kind("round") if r.get("config") == label}
        if rounds_wanted and len(done) < rounds_wanted:
            source.notes.append(f"'{label}' completed {len(done)} of {rounds_wanted} rounds (interrupted?)")
    return source
