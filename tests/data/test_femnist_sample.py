"""The FEMNIST sample shipped in datasets/femnist-sample: real writers, unchanged bytes, offline runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hebench.config import DataSpec, parse_suite
from hebench.data.cache import FEMNIST_SAMPLE
from hebench.data.fetch import sha256_of
from hebench.data.leaf import read_split
from hebench.data.presence import list_datasets
from hebench.data.registry import load_federated
from hebench.errors import SuiteError
from hebench.results import read_records
from hebench.runtime.runner import Runner

WRITERS = ["f3687_48", "f3728_28", "f3785_26", "f3793_06", "f3797_07"]
# The blobs SOURCE.md names (FedLab b116ae10, tests/data/leaf/): copied byte for byte.
SHA256 = {
    "train/train.json": "84ed275129f509fdbc758fa5604ef791419b5797c65cef9e18a9227eba01a7f4",
    "test/test.json": "2653603427d97d07e34ca226ea34563fd7a029881e591fff2f686a05ad7369ab",
}


def test_sample_files_are_the_published_blobs_with_their_provenance():
    assert {name: sha256_of(FEMNIST_SAMPLE / name) for name in SHA256} == SHA256
    source = (FEMNIST_SAMPLE.parent / "SOURCE.md").read_text()
    assert "Apache License 2.0" in source and "b116ae10b5fd511ba468334e138633e6cfee236d" in source


def test_sample_holds_five_writers_of_28x28_images():
    train, test = read_split(FEMNIST_SAMPLE, "train"), read_split(FEMNIST_SAMPLE, "test")
    assert sorted(train) == sorted(test) == WRITERS
    assert [len(train[w][1]) for w in WRITERS] == [18, 17, 16, 16, 11]
    for x, y in train.values():
        assert x.shape[1:] == (1, 28, 28) and 0 <= int(y.min()) and int(y.max()) < 62


def test_data_sample_loads_the_shipped_writers_as_clients():
    data = load_federated(DataSpec(dataset="femnist", clients="all", sample=True), 0)
    assert sorted(c.client_id for c in data.clients) == WRITERS and data.num_classes == 62
    assert sum(len(c) for c in data.clients) == 78 and len(data.test_y) == 89


@pytest.mark.parametrize(
    "data", [{"dataset": "digits", "sample": True}, {"dataset": "femnist", "sample": True, "path": "x"}]
)
def test_sample_is_only_the_shipped_femnist(data):
    with pytest.raises(SuiteError, match="sample"):
        parse_suite({"name": "t", "data": data, "configurations": [{"mode": "raw"}]})


def test_datasets_list_shows_the_sample_present():
    sample = next(s for s in list_datasets() if s.name == "femnist (sample)")
    assert sample.present and "data.sample" in sample.how


@pytest.mark.slow  # one round of raw and of each offload configuration (engines included); the suite's host-he
def test_femnist_sample_suite_runs_end_to_end(tmp_path):  # configurations run the same adapters in other tests
    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "suites" / "femnist-sample.yaml").read_text())
    raw["model"] = {"name": "mlp", "hidden": 4}
    raw["training"]["rounds"] = 1
    raw["configurations"] = [c for c in raw["configurations"] if c["mode"] in ("raw", "offload")]
    suite = parse_suite(raw)
    records = read_records(Runner(suite, tmp_path).run()).records
    run = next(r.to_json() for r in records if r.to_json()["kind"] == "run")
    assert run["data"]["clients"] == 5 and run["suite"]["data"]["sample"] is True
    rounds = [r.to_json() for r in records if r.to_json()["kind"] == "party_round"]
    aggregated = {r["config"] for r in rounds if r["role"] == "aggregator"}
    assert aggregated == {c.label for c in suite.configurations}
    assert all(len(r["selected"]) == 2 for r in rounds if r["role"] == "aggregator")
