"""``hebench compare RUN_A RUN_B``: per-configuration ratios B/A of headline metrics, with a significance
check over steady rounds (Welch's t-test), after checking that the two runs are comparable at all. Round walls
are on each configuration's link where it ran on one (measured when emulated, modelled for ``emulation: model``),
as the report and ``hebench show`` give them.

As pyperf's ``compare_to``: metadata first (suite, hebench and library versions, CPU), then a ratio
only where the difference is significant; otherwise "not significant".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hebench.analysis.load_flags import party_processes, usable_cores
from hebench.analysis.stats import no_spread, welch_test
from hebench.analysis.suite_diff import suite_differences
from hebench.analysis.summary import SummaryRow, summarize_run
from hebench.analysis.text_leakage import TextComparison, compare_text, text_verdicts
from hebench.analysis.text_threats import text_threats
from hebench.errors import ParameterError
from hebench.links.outcomes import on_their_links
from hebench.measure.environment import comparable
from hebench.results.reader import read_hebench_records
from hebench.results.records import (
    ConfigurationRecord,
    Record,
    RunFailedRecord,
    RunRecord,
    TextAttackSummaryRecord,
)
from hebench.results.run_folder import results_file

ALPHA = 0.05  # two-sided significance level
# (name shown, SummaryRow mean, its per-round values, unit)
METRICS = (
    ("client CPU/round", "client_cpu_s_per_round", "client_cpu_s_rounds", "s"),
    ("upload/round", "upload_bytes_per_client_round", "upload_bytes_rounds", "B"),
    ("round wall", "round_wall_s", "round_wall_s_rounds", "s"),
)


@dataclass(frozen=True)
class MetricComparison:
    """One headline metric of one configuration in both runs."""

    metric: str
    unit: str  # s or B
    a: float | None
    b: float | None
    ratio: float | None  # b / a
    p_value: float | None  # Welch's t-test over steady rounds; None: not testable
    verdict: str  # "significant", "not significant", "too few rounds", "identical", "missing"

    @property
    def significant(self) -> bool:
        return self.verdict == "significant"


@dataclass(frozen=True)
class ConfigComparison:
    config: str
    metrics: tuple[MetricComparison, ...] = ()
    only_in: str | None = None  # "A" or "B": the configuration is in one run only


@dataclass(frozen=True)
class RunComparison:
    a: str  # the runs' folder names
    b: str
    warnings: tuple[str, ...]
    configs: tuple[ConfigComparison, ...]
    text: tuple[TextComparison, ...] = ()  # language-model runs: each view's text-leakage verdict in A and B


@dataclass(frozen=True)
class _Run:
    name: str
    records: tuple[Record, ...]
    rows: tuple[SummaryRow, ...]
    file: Path
    modelled: tuple[str, ...] = ()  # configurations whose round walls are modelled on their links
    skipped: str | None = None  # how many lines of its results file were skipped, and why

    @property
    def run(self) -> RunRecord | None:
        runs = [r for r in self.records if isinstance(r, RunRecord)]
        return runs[-1] if runs else None


def _load(path: Path) -> _Run:
    """A run's records and rows, round walls on each configuration's link where it had one (as the report and
    ``show`` read them): measured on emulated links, modelled for ``emulation: model``, never loopback walls."""
    result = read_hebench_records(path)
    read = result.records
    records, _ = on_their_links(read)
    modelled = tuple(
        r.config for r in read if isinstance(r, ConfigurationRecord) and (r.network or {}).get("emulation") == "model"
    )
    name = path.name if path.is_dir() else path.stem
    file = results_file(path)
    return _Run(name, tuple(records), tuple(summarize_run(records)), file, modelled, result.skipped_note(file))


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float | None, str]:
    """(p-value, verdict) of Welch's two-sided t-test on two samples of per-round values."""
    if len(a) < 2 or len(b) < 2:
        return None, "too few rounds"
    if no_spread(a) and no_spread(b):  # no variance (e.g. bytes): the values themselves decide
        return None, "identical" if math.isclose(a[0], b[0], rel_tol=1e-12) else "significant"
    p = welch_test(a, b)
    return p, "significant" if p is not None and p < ALPHA else "not significant"


def _metric(name: str, unit: str, mean: str, series: str, ra: SummaryRow, rb: SummaryRow) -> MetricComparison:
    a, b = getattr(ra, mean), getattr(rb, mean)
    if a is None or b is None:
        return MetricComparison(name, unit, a, b, None, None, "missing")
    p, verdict = welch(getattr(ra, series), getattr(rb, series))
    return MetricComparison(name, unit, a, b, b / a if a else None, p, verdict)


def contention(run: _Run) -> str | None:
    """Why ``run``'s wall times include waiting for a core, in a few words (None: they do not)."""
    record = run.run
    cores = usable_cores(record.environment) if record else None
    if record is None or not cores:
        return None
    clients = int(record.data.get("clients") or (record.suite.get("data") or {}).get("clients") or 0)
    loads = [r.load_avg_max for r in run.rows if r.load_avg_max is not None]
    loads += [v for v in (record.environment.get("load_avg") or [None])[:1] if v is not None]
    processes = [
        party_processes(r, record.suite, clients, cores) for r in run.rows if r.runtime != "flower" and clients
    ]
    parts = []
    if loads and max(loads) > cores:
        parts.append(f"load up to {max(loads):.1f}")
    if processes and max(processes) > cores:
        parts.append(f"up to {max(processes)} party processes")
    return f"{' and '.join(parts)} on {cores} cores" if parts else None


def _contention_warning(a: _Run, b: _Run) -> str | None:
    """One warning for both runs' CPU contention (each run's own load notes say it per configuration)."""
    ca, cb = contention(a), contention(b)
    if ca is None and cb is None:
        return None
    if ca == cb:
        where = f"A and B ({ca})"
    else:
        where = " and ".join(f"{tag} ({c})" for tag, c in (("A", ca), ("B", cb)) if c is not None)
    return f"wall times include waiting for a core in {where}: compare CPU times, or rerun on a quieter machine"


def metadata_warnings(a: _Run, b: _Run) -> list[str]:
    """What makes the two runs' figures not directly comparable (checked before any ratio); each said once."""
    ra, rb = a.run, b.run
    skipped = [f"{run.name}: {run.skipped}" for run in (a, b) if run.skipped]
    if ra is None or rb is None:
        return [*skipped, f"{(a if ra is None else b).name} has no run record: its suite and environment are unknown"]
    out = skipped
    if a.file.read_bytes() == b.file.read_bytes():
        out.append("A and B hold identical records (a copy of one run?): every ratio is 1 by construction")
    if ra.suite_hash != rb.suite_hash:
        fields = suite_differences(ra.suite, rb.suite)
        out.append(f"the suites differ ({', '.join(fields[:6])}{' …' if len(fields) > 6 else ''})")
    env = comparable(dict(ra.environment), dict(rb.environment))
    if ra.environment.get("hebench") != rb.environment.get("hebench"):
        env.insert(0, "hebench")
    if env:
        out.append(f"the environments differ in {', '.join(env)}")
    for tag, run in (("A", a), ("B", b)):
        failed = [r for r in run.records if isinstance(r, RunFailedRecord)]
        if failed:
            out.append(f"{tag} failed ({failed[-1].error}: {failed[-1].problem})")
    out += [w for w in (_modelled_warning(a, b),) if w]
    busy = _contention_warning(a, b)
    return [*out, busy] if busy else out


def _modelled_warning(a: _Run, b: _Run) -> str | None:
    """Round walls that are a model, not a measurement (``emulation: model``): said before B/A compares them."""
    parts = [f"{tag}'s {', '.join(run.modelled)}" for tag, run in (("A", a), ("B", b)) if run.modelled]
    if not parts:
        return None
    return (
        f"round walls of {' and '.join(parts)} are modelled on their links (emulation: model: loopback rounds plus "
        "the modelled transfers), not measured; every round wall compared is on the configuration's link"
    )


def compare_runs(path_a: Path, path_b: Path) -> RunComparison:
    """Configurations matched by label; metrics compared over each run's steady rounds.

    Refuses to compare a run folder with itself (:class:`ParameterError`): every ratio would be 1.
    """
    if results_file(path_a).resolve() == results_file(path_b).resolve():
        raise ParameterError(
            f"A and B are the same run ({path_a}): every ratio would be 1 by construction",
            "pass two different run folders, e.g. the same suite run again with --out results/NAME-2",
        )
    a, b = _load(path_a), _load(path_b)
    rows_b = {r.config: r for r in b.rows}
    configs = []
    for ra in a.rows:
        rb = rows_b.get(ra.config)
        if rb is None:
            configs.append(ConfigComparison(ra.config, only_in="A"))
            continue
        metrics = tuple(_metric(name, unit, mean, series, ra, rb) for name, mean, series, unit in METRICS)
        configs.append(ConfigComparison(ra.config, metrics))
    labels_a = {r.config for r in a.rows}
    configs += [ConfigComparison(r.config, only_in="B") for r in b.rows if r.config not in labels_a]
    text_a, text_b = (text_verdicts(r for r in run.records if isinstance(r, TextAttackSummaryRecord)) for run in (a, b))
    threats = {
        (t.verdict.config, t.verdict.view): t.key
        for run, verdicts in ((b, text_b), (a, text_a))
        for t in text_threats(run.rows, verdicts)
    }
    text = [replace(t, threat=threats.get((t.config, t.view), t.threat)) for t in compare_text(text_a, text_b)]
    return RunComparison(a.name, b.name, tuple(metadata_warnings(a, b)), tuple(configs), tuple(text))
