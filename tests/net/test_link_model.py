"""The transfer model and the model backend: modelled round times, marked as such, and time-to-accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hebench.config import NetworkSpec, parse_suite
from hebench.links.model import ClientTraffic, RoundTraffic, ServerTraffic, model_round
from hebench.links.outcomes import on_their_links, time_to_accuracy
from hebench.links.plan import MBIT, plan_network
from hebench.links.segments import wire_bytes
from hebench.results import read_records
from hebench.results.records import ConfigurationRecord, PartyRoundRecord, RoundRecord
from hebench.runtime.runner import Runner

SPEC = {"clients": {"uplink_mbit": 1, "downlink_mbit": 4, "delay_ms": 50}, "server": {"uplink_mbit": 2}}


def traffic(up: int, down: int, wall: float = 0.5, clients: int = 2) -> RoundTraffic:
    return RoundTraffic(
        "c",
        1,
        wall,
        tuple(ClientTraffic(i, up, down, 4, 0.2) for i in range(clients)),
        (ServerTraffic("aggregator", down * clients, up * clients, 4),),
    )


def test_the_slowest_link_and_the_turns_decide_the_modelled_round():
    plan = plan_network(NetworkSpec.model_validate(SPEC), clients=2, seed=0)
    got = model_round(traffic(1_000_000, 500_000), plan)
    assert got.upload_s == pytest.approx(wire_bytes(1_000_000) / MBIT)  # 1 Mbit/s uplink
    # the server's uplink (2 Mbit/s) sends 2 × 0.5 MB, slower than each client's 4 Mbit/s downlink of 0.5 MB
    assert got.download_s == pytest.approx(wire_bytes(1_000_000) / (2 * MBIT))
    assert got.latency_s == pytest.approx(4 * 0.05)


def test_a_slower_tier_adds_its_compute_and_its_own_link():
    spec = NetworkSpec.model_validate(
        {**SPEC, "tiers": [{"share": 0.5}, {"share": 0.5, "link": {"uplink_mbit": 0.5}, "compute_slowdown": 3}]}
    )
    plan = plan_network(spec, clients=2, seed=0)
    got = model_round(traffic(100_000, 10_000), plan)
    assert got.upload_s == pytest.approx((3 - 1) * 0.2 + wire_bytes(100_000) / (0.5 * MBIT))


def test_time_to_accuracy_adds_the_round_walls_up_to_the_first_round_at_the_target():
    records = [
        *(RoundRecord(config="c", round=r, accuracy=a) for r, a in enumerate((0.3, 0.6, 0.9, 0.95))),
        *(PartyRoundRecord(config="c", role="aggregator", round=r, round_wall_s=w) for r, w in enumerate((2, 1, 1, 1))),
    ]
    reached = time_to_accuracy(records, "c", 0.85, "lte", modelled=False)
    assert reached is not None and (reached.round, reached.wall_s, reached.accuracy) == (2, 4.0, 0.9)
    assert time_to_accuracy(records, "c", 0.99, "lte", modelled=False) is None


@pytest.fixture(scope="module")
def model_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("model")
    suite = {
        "name": "model",
        "data": {"dataset": "digits", "clients": 2},
        "model": {"name": "mlp", "hidden": 4},
        "training": {"rounds": 2, "lr": 0.1, "target_accuracy": 0.01},
        "configurations": [{"mode": "raw"}],
        "network": {**SPEC, "emulation": "model"},
    }
    Runner(parse_suite(json.loads(json.dumps(suite))), out).run()
    return out


@pytest.mark.slow
def test_the_model_backend_runs_on_loopback_and_writes_modelled_rounds(model_run):
    rows = [r.to_json() for r in read_records(model_run / "results.jsonl").records]
    walls = {r["round"]: r["round_wall_s"] for r in rows if r["kind"] == "party_round" and r["role"] == "aggregator"}
    modelled = [r for r in rows if r["kind"] == "modelled_round"]
    assert [r["round"] for r in modelled] == [0, 1] and all(r["modelled"] for r in modelled)
    for r in modelled:
        assert r["loopback_round_wall_s"] == walls[r["round"]]
        assert r["round_wall_s"] == pytest.approx(r["loopback_round_wall_s"] + r["transfer_s"])
        assert r["upload_s"] > 0 and r["latency_s"] == pytest.approx(4 * 0.05)
    clients = [r for r in rows if r["kind"] == "party_round" and r["role"] == "client"]
    assert all(r["network"]["transfer_s"] == 0 and r["network"]["up_bytes"] == r["bytes_sent"] for r in clients)
    (reached,) = [r for r in rows if r["kind"] == "time_to_accuracy"]
    assert reached["modelled"] and reached["wall_s"] == pytest.approx(modelled[0]["round_wall_s"])


@pytest.mark.slow
def test_a_report_puts_the_model_runs_round_times_on_its_link_and_says_they_are_modelled(model_run, tmp_path):
    from hebench.report.build import build_report

    records = read_records(model_run / "results.jsonl").records
    swapped, notes = on_their_links(records)
    agg = [r for r in swapped if isinstance(r, PartyRoundRecord) and r.role == "aggregator"]
    assert all(r.extra["loopback_round_wall_s"] < r.round_wall_s for r in agg)
    assert len(notes) == 1 and "modelled" in notes[0]
    assert any(isinstance(r, ConfigurationRecord) for r in swapped)
    html = build_report([model_run], tmp_path / "r.html").read_text()
    assert "What to choose on each link" in html and "(modelled)" in html
