"""The language study: its arithmetic on recorded rows (memory fit, per-configuration costs, the memory goal
against the raw LoRA client, full ÷ LoRA ratios), and its measurement end to end on a tiny decoder (the shipped
GPT-2-small suite's configurations on ``gpt2_tiny``, 2 clients, 2 rounds): behaviour only, no timing."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

import hebench.bench.language as language_study
from hebench.bench.language import (
    CLIENT_GB,
    FIXED_GB,
    GB,
    _suite,
    clients_that_fit,
    configuration_row,
    full_over_lora,
    labels,
    language,
    measure,
    memory_goals,
    summarise,
)
from hebench.config import load_suite, parse_suite
from hebench.config.catalog import shipped_suite
from hebench.errors import ParameterError


def _party(config: str, role: str, rnd: int, rss: int, *, client: int | None = None, sent: int = 0, **cpu: float):
    phases = {name: {"cpu_s": s, "wall_s": s} for name, s in cpu.items()}
    return {
        "kind": "party_round",
        "config": config,
        "role": role,
        "round": rnd,
        "client": client,
        "phases": phases,
        "bytes_sent": sent,
        "peak_rss_bytes": rss,
        "round_wall_s": 1.0,
    }


def _records(config: str, values: int, kind: str, sent: int, encrypt: float, rss: int) -> list[dict]:
    return [
        {"kind": "configuration", "config": config, "update_parameters": values, "fine_tuning": {"kind": kind}},
        _party(config, "client", 0, rss, client=0, sent=sent, train=9.0, encrypt=99.0),  # warm-up: left out
        _party(config, "client", 1, rss, client=0, sent=sent, train=5.0, encrypt=encrypt, evaluate=1.0, wait=7.0),
        _party(config, "aggregator", 1, 100, aggregate=encrypt / 10, wait=3.0),
        {"kind": "round", "config": config, "round": 1},
    ]


def test_the_clients_that_fit_leave_room_for_full_fine_tunings_peak():
    assert clients_that_fit(8, FIXED_GB + 8 * CLIENT_GB["full"], needs_full=True) == 8
    assert clients_that_fit(8, FIXED_GB + 3.5 * CLIENT_GB["full"], needs_full=True) == 3
    assert clients_that_fit(8, 1.0, needs_full=True) == 0


def test_rows_ratios_and_the_memory_goal_come_from_the_steady_rounds_of_the_same_run():
    records = [
        *_records("lora/raw", 1000, "lora", 4_100, 0.0, 1_000),
        *_records("lora/compact-bfv-16", 1000, "lora", 8_000, 0.5, 1_400),
        *_records("full/compact-bfv-16", 300_000, "full", 2_400_000, 150.0, 3_000),
    ]
    rows = [configuration_row(c, records) for c in ("lora/raw", "lora/compact-bfv-16", "full/compact-bfv-16")]
    memory_goals(rows)
    raw, lora, full = rows
    assert raw["largest_vs_raw_client"] == 1.0
    assert lora["completes"] and lora["client_cpu_s_per_round"] == pytest.approx(6.5)  # train + encrypt + evaluate
    assert lora["client_protection_cpu_s_per_round"] == pytest.approx(0.5)
    assert lora["upload_bytes_per_client_round"] == 8_000 and lora["within_goal"]
    assert full["largest_vs_raw_client"] == pytest.approx(3.0) and not full["within_goal"]
    (pair,) = full_over_lora(rows)
    assert pair["update_values_ratio"] == 300
    assert pair["ratios"]["upload_bytes_per_client_round"] == pytest.approx(300)
    assert pair["ratios"]["client_protection_cpu_s_per_round"] == pytest.approx(300)
    assert pair["ratios"]["client_cpu_s_per_round"] == pytest.approx(156 / 6.5)


def test_the_study_runs_the_shipped_gpt2_suite_and_pairs_its_full_row_with_lora_under_the_same_he():
    labels = {c.label: c for c in load_suite(shipped_suite("language-gpt2").path).configurations}
    assert {"lora/raw", "lora/compact-bfv-16", "full/compact-bfv-16"} <= set(labels)
    assert labels["full/compact-bfv-16"].params == labels["lora/compact-bfv-16"].params
    assert labels["full/compact-bfv-16"].fine_tuning is not None and labels["lora/raw"].fine_tuning is None


def _tiny_suite() -> dict:
    """The GPT-2-small suite's raw, compact and full rows on the tiny decoder: 2 clients, 2 rounds, one step."""
    raw = yaml.safe_load(shipped_suite("language-gpt2").path.read_text(encoding="utf-8"))
    keep = {"lora/raw", "lora/compact-bfv-16", "full/compact-bfv-16"}
    raw["configurations"] = [c for c in raw["configurations"] if c.get("name") in keep]
    raw["data"].update(clients=2, block_tokens=32)
    raw["model"] = {**raw["model"], "name": "gpt2_tiny"}
    del raw["model"]["vocab_size"]
    raw["training"]["rounds"] = 2
    return raw


@pytest.mark.slow  # three tiny runs, every party its own process (~2.5 min on the shared machine)
def test_the_study_measures_each_configuration_and_full_fine_tuning_sends_what_its_update_carries():
    rows, errors = measure(parse_suite(_tiny_suite()))
    assert errors == {}
    by = {r["config"]: r for r in rows}
    assert set(by) == {"lora/raw", "lora/compact-bfv-16", "full/compact-bfv-16"}
    for row in rows:
        assert row["completes"] and row["failure"] is None
        assert row["upload_bytes_per_client_round"] > 0 and row["client_cpu_s_per_round"] > 0
        assert set(row["peak_rss_bytes"]) >= {"client-0", "client-1", "aggregator"}  # every party its own process
        assert row["peak_rss_vs_raw_client"]  # measured against the raw LoRA client of the same run
    lora, full = by["lora/compact-bfv-16"], by["full/compact-bfv-16"]
    assert (lora["fine_tuning"], full["fine_tuning"]) == ("lora", "full")
    assert full["update_values"] > 10 * lora["update_values"]
    # the same 16-bit encoding: bytes scale with the values an update carries (ciphertext granularity aside)
    bytes_ratio = full["upload_bytes_per_client_round"] / lora["upload_bytes_per_client_round"]
    values_ratio = full["update_values"] / lora["update_values"]
    assert 0.5 * values_ratio < bytes_ratio < 2 * values_ratio
    summary = summarise(rows)
    (pair,) = summary["full_over_lora"]
    assert pair["update_values_ratio"] == pytest.approx(values_ratio)
    assert pair["ratios"]["upload_bytes_per_client_round"] == pytest.approx(bytes_ratio)
    assert summary["why"].startswith(f"a full update carries {values_ratio:.0f}x the values")


def test_a_configuration_that_fails_is_reported_with_its_error_and_the_next_one_still_runs(monkeypatch):
    ran: list[str] = []

    class Runner:  # the first configuration's run breaks; the study goes on to the next
        def __init__(self, suite, run_dir):
            self.label = suite.configurations[0].label

        def run(self):
            ran.append(self.label)
            if self.label == "lora/raw":
                raise MemoryError("out of memory")

    monkeypatch.setattr(language_study, "Runner", Runner)
    rows, errors = measure(parse_suite(_tiny_suite()))
    assert ran == ["lora/raw", "lora/compact-bfv-16", "full/compact-bfv-16"]
    assert errors == {"lora/raw": "MemoryError: out of memory"}
    assert rows[0]["failure"] == "MemoryError: out of memory" and not rows[0]["completes"]


def test_the_study_runs_the_configurations_asked_for_and_names_the_choices_when_one_is_unknown():
    chosen = _suite(2, 2, labels("lora/compact-bfv-16, full/compact-bfv-16"))
    assert [c.label for c in chosen.configurations] == ["lora/compact-bfv-16", "full/compact-bfv-16"]
    assert chosen.data.clients == 2 and chosen.training.rounds == 2
    with pytest.raises(ParameterError, match="no configuration lora/nope") as err:
        _suite(2, 2, ("lora/nope",))
    assert "choose among lora/raw" in err.value.fix
    with pytest.raises(ParameterError, match="names no configuration"):
        labels(" , ")


def test_the_study_refuses_a_run_without_a_steady_round():
    with pytest.raises(ParameterError, match="warm-up"):
        language(clients=2, rounds=1)


def test_each_fine_tuning_kind_runs_with_the_most_clients_its_own_peak_leaves_room_for(monkeypatch):
    available = FIXED_GB + 8 * CLIENT_GB["lora"] + 0.1  # 8 LoRA clients fit; full fine-tuning's fewer
    monkeypatch.setattr(language_study.psutil, "virtual_memory", lambda: SimpleNamespace(available=available * GB))
    asked: dict = {}

    def measure(suite, clients):
        asked.update(clients)
        return [], {}

    monkeypatch.setattr(language_study, "measure", measure)
    out = language(clients=8, rounds=2)
    full = clients_that_fit(8, available, needs_full=True)
    assert asked == out["clients"] == {"lora": 8, "full": full} and full < 8
    said = out["fewer_clients"]
    assert said.startswith("8 clients of full fine-tuning need about") and "lora" not in said
