"""``hebench run`` of a language-model suite attacks its configurations' views for text by default (the
``text_leakage`` block, as ``hebench attack RUN`` does) and records the results in the run; ``text_leakage: false``
turns it off; a bad value is a typed suite error naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.config import load_suite, parse_suite
from hebench.data.registry import load_federated
from hebench.errors import SuiteError
from hebench.models.language.run_files import write_run_files
from hebench.results import ResultWriter, read_records
from hebench.results.records import TextAttackRecord, TextAttackSummaryRecord
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner

ROOT = Path(__file__).resolve().parents[3]


def _tiny(**extra) -> dict:
    """suites/text-leakage.yaml cut to 8-token blocks and two configurations whose views the attack settles fast:
    client-level DP with noise as large as the update (no span left) and offload (the aggregator holds ciphertext).
    ``hebench attack``'s test recovers a plain view through the same code."""
    raw = yaml.safe_load((ROOT / "suites" / "text-leakage.yaml").read_text())
    raw["data"]["block_tokens"] = 8
    raw["configurations"] = [
        {"mode": "raw", "dp": {"level": "client", "clip": 1.0, "noise_multiplier": 1.0}},
        {"mode": "offload", "adapter": "tenseal-ckks"},
    ]
    return {**raw, **extra}


def test_a_language_suite_attacks_text_by_default_and_text_leakage_false_turns_it_off():
    on = parse_suite(_tiny())
    assert on.text_attacks is not None and on.text_attacks.batch_sizes == (1,) and on.text_attacks.attack == "span"
    assert on.text_attacks.mask_sources == ("global", "local", "sample")  # the grid suite's: each source
    bare = parse_suite({k: v for k, v in _tiny().items() if k != "text_leakage"}).text_attacks
    assert bare is not None and bare.mask_sources == ("global",)  # by default the mask its run agrees
    assert parse_suite(_tiny(text_leakage=False)).text_attacks is None
    assert parse_suite(_tiny(text_leakage={"enabled": False})).text_attacks is None
    shipped = load_suite(ROOT / "suites" / "language.yaml")
    assert shipped.text_attacks is not None  # suites/language.yaml attacks by default
    assert load_suite(ROOT / "suites" / "quickstart.yaml").text_attacks is None  # images: the privacy section


@pytest.mark.parametrize(
    ("value", "field", "words"),
    [
        ({"batch_sizes": [0]}, "text_leakage.batch_sizes.0", "greater than or equal to 1"),
        ({"batch_sizes": []}, "text_leakage.batch_sizes", "at least 1"),
        ({"attack": "dlg"}, "text_leakage.attack", "'span' or 'optimisation'"),
        ({"batch": 2}, "text_leakage.batch", "unknown field"),
        ({"mask_sources": ["everyone"]}, "text_leakage.mask_sources.0", "'sample', 'local' or 'global'"),
        ({"mask_sources": []}, "text_leakage.mask_sources", "at least 1"),
        (3, "text_leakage", "true, false or a block"),
    ],
)
def test_a_bad_text_leakage_value_is_a_suite_error_naming_its_field(value, field, words):
    with pytest.raises(SuiteError) as err:
        parse_suite(_tiny(text_leakage=value))
    assert f"field '{field}'" in str(err.value) and words in str(err.value)


def test_text_leakage_on_an_image_suite_is_refused_and_a_text_suites_privacy_section_points_to_it():
    image = yaml.safe_load((ROOT / "suites" / "quickstart.yaml").read_text())
    with pytest.raises(SuiteError, match=r"field 'text_leakage'.*data digits is not text"):
        parse_suite({**image, "text_leakage": {"enabled": False}})
    with pytest.raises(SuiteError, match="attacked by its text_leakage section"):
        parse_suite(_tiny(privacy={}))


def _prepared(tmp_path: Path, suite, files: bool = True) -> Runner:
    """A run folder as ``hebench run`` leaves it before its attacks (the suite; the tokenizer and the model)."""
    tmp_path.mkdir(parents=True)
    folder = RunFolder(tmp_path)
    runner = Runner(suite, tmp_path)
    folder.suite.write_text(yaml.safe_dump(suite.model_dump(mode="json"), sort_keys=False))
    if files:
        write_run_files(folder, suite, load_federated(suite.data, suite.seed).tokenizer)
    return runner


@pytest.mark.slow  # transformers and the pretrained base load: ~15 s
def test_the_runs_text_attacks_are_recorded_in_its_results_and_skipped_when_turned_off(tmp_path):
    # Arrange
    runner = _prepared(tmp_path / "on", parse_suite(_tiny()))
    off = _prepared(tmp_path / "off", parse_suite(_tiny(text_leakage=False)), files=False)
    # Act: the runner's step after the configurations' rounds
    for r in (runner, off):
        with ResultWriter(r.folder.results) as writer:
            r._run_text_attacks(writer, resume=False)
    # Assert: one record per victim batch and one summary per view, in the run's results
    records = read_records(runner.folder.results)
    summaries = records.of(TextAttackSummaryRecord)
    labels = [c.label for c in runner.suite.configurations]
    assert [(s.config, s.view, s.batch_size) for s in summaries] == [(labels[0], "dp", 1), (labels[1], "encrypted", 1)]
    noised, sealed = summaries
    assert noised.outcomes == {"failed": 1} and noised.exact == 0 and noised.sequences == 1
    assert sealed.outcomes == {"failed": 1} and sealed.why.startswith("nothing-observed") and sealed.exact == 0
    assert sealed.examples[0]["original"] and sealed.examples[0]["recovered"] is None
    batches = records.of(TextAttackRecord)
    assert [(b.config, b.outcome) for b in batches] == [(labels[0], "failed"), (labels[1], "failed")]
    assert len(batches[1].references) == 1 and len(batches[1].references[0]) == 8 and batches[1].recovered_tokens == ()
    assert read_records(off.folder.results).of(TextAttackSummaryRecord) == []
    # resumed: the views attacked before are not attacked again
    with ResultWriter(runner.folder.results) as writer:
        runner._run_text_attacks(writer, resume=True)
    assert len(read_records(runner.folder.results).of(TextAttackSummaryRecord)) == 2


@pytest.mark.slow  # the pretrained base loads: ~15 s
def test_a_resumed_run_attacks_the_views_a_partly_attacked_configuration_has_left(tmp_path):
    # Arrange: two batch sizes; the run stopped after the first configuration's batch of 1
    runner = _prepared(tmp_path / "run", parse_suite(_tiny(text_leakage={"batch_sizes": [1, 2]})))
    with ResultWriter(runner.folder.results) as writer:
        runner._run_text_attacks(writer, resume=False)
    lines = runner.folder.results.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"text_attack_summary"' in line)
    runner.folder.results.write_text("\n".join(lines[: first + 1]) + "\n")
    # Act
    with ResultWriter(runner.folder.results) as writer:
        runner._run_text_attacks(writer, resume=True)
    # Assert: every (configuration, view, batch size) summarised once, the one done before not again
    labels = [c.label for c in runner.suite.configurations]
    cells = [(s.config, s.view, s.batch_size) for s in read_records(runner.folder.results).of(TextAttackSummaryRecord)]
    assert cells == [
        (labels[0], "dp", 1),
        (labels[0], "dp", 2),
        (labels[1], "encrypted", 1),
        (labels[1], "encrypted", 2),
    ]
