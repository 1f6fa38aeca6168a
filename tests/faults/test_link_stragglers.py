"""Stragglers on slow links: with a round deadline, a client whose upload would finish after it on its access link
is late, counted before it sends (so its update never enters the sum). Two tiers: the fast one's upload takes
milliseconds, the slow one's (0.05 Mbit/s up) about 17 s for the update's ~102 kB, against a 3 s deadline:
the outcome follows from the sizes and rates, not from how fast this machine computes. With sample-level DP, a
late client trained but released nothing: its privacy ledger stays empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.config import parse_suite
from hebench.faults.link_time import upload_link_s
from hebench.links.plan import MBIT, Link, plan_network
from hebench.links.segments import wire_bytes
from hebench.protections.dp.ledger import PrivacyLedger
from hebench.results import read_records
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner

DEADLINE_S = 3.0
FAST = {"uplink_mbit": 100, "downlink_mbit": 100}
SLOW = {"uplink_mbit": 0.05, "downlink_mbit": 100}  # only the uplink is slow: the aggregate still arrives fast
SUITE = {
    "name": "link-stragglers",
    "seed": 4,
    "data": {"dataset": "digits", "clients": 4},
    "model": {"name": "mlp", "hidden": 32},  # on 28x28 digits: 25,450 parameters, 101,800 bytes of float32
    "training": {"rounds": 2, "local_steps": 1, "round_deadline_s": DEADLINE_S, "min_clients": 1},
    "network": {"tiers": [{"share": 0.5, "link": FAST}, {"share": 0.5, "link": SLOW}]},
    "runtime": {"hosting": "pool", "workers": 1},
    "configurations": [{"mode": "raw", "dp": {"level": "sample", "clip": 1.0, "noise_multiplier": 1.0}}],
    "measure": {"decryption_error": False},
}
UPDATE_BYTES = 4 * (784 * 32 + 32 + 32 * 10 + 10)


def test_an_upload_takes_its_wire_bytes_at_the_uplink_rate_after_the_delay():
    link = Link("l", up_Bps=1e6, delay_s=0.02)
    assert upload_link_s(link, 10_000) == pytest.approx(0.02 + wire_bytes(10_000) / 1e6)
    assert upload_link_s(Link("unlimited", delay_s=0.005), 10**9) == 0.005  # no rate: the delay only


def tiers() -> dict[int, int]:
    suite = parse_suite(SUITE)
    plan = plan_network(suite.network_for(suite.configurations[0]), 4, suite.seed)
    return {int(c.party.rpartition("-")[2]): c.tier for c in plan.clients}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("link-stragglers") / "run"
    Runner(parse_suite(SUITE), out).run()
    return out


@pytest.mark.slow
def test_the_slow_tier_misses_the_deadline_and_the_fast_one_does_not(run):
    tier = tiers()
    slow = {c for c, k in tier.items() if k == 1}
    assert sorted(tier.values()) == [0, 0, 1, 1]
    assert wire_bytes(UPDATE_BYTES) / (SLOW["uplink_mbit"] * MBIT) > 4 * DEADLINE_S  # late whatever the compute
    rounds = sorted(read_records(run / "results.jsonl", kind="round").records, key=lambda r: r.round)
    assert [r.round for r in rounds] == [0, 1]
    for r in rounds:
        assert r.dropped == {str(c): "late" for c in sorted(slow)}
        assert r.arrived == 2 and not r.skipped


@pytest.mark.slow
def test_each_client_records_its_uploads_time_on_its_link(run):
    tier = tiers()
    clients = [r for r in read_records(run / "results.jsonl", kind="party_round").records if r.role == "client"]
    assert len(clients) == 8
    for rec in clients:
        rate = (FAST if tier[rec.client] == 0 else SLOW)["uplink_mbit"] * MBIT
        if rec.round == 0 or tier[rec.client] == 1:  # before a first upload: the update's plaintext bytes
            assert rec.upload_link_s == pytest.approx(wire_bytes(UPDATE_BYTES) / rate, rel=1e-9)
        else:  # then the bytes its last upload took (the update and its framing)
            assert wire_bytes(UPDATE_BYTES) / rate <= rec.upload_link_s < 1.01 * wire_bytes(UPDATE_BYTES) / rate
        assert (rec.dropout_phase == "late") == (tier[rec.client] == 1)


@pytest.mark.slow
def test_a_late_client_is_not_charged_for_the_round_it_trained_in(run):
    tier = tiers()
    folder, label = RunFolder(run), parse_suite(SUITE).configurations[0].label
    clients = [r for r in read_records(run / "results.jsonl", kind="party_round").records if r.role == "client"]
    for rec in clients:
        assert "train" in rec.phases  # every client trained, late or not
        assert rec.dp_steps == (0 if tier[rec.client] == 1 else rec.round + 1), (rec.round, rec.client)
    for c, k in tier.items():
        charged = [charge.round for charge in PrivacyLedger(folder.dp_ledger(label, c)).charges()]
        assert charged == ([] if k == 1 else [0, 1]), c


@pytest.mark.slow
def test_a_deadline_without_faults_skips_a_round_every_client_misses_on_its_link(tmp_path):
    """No ``faults:`` block: the deadline alone makes every client late on a slow link; the round is skipped and
    each client keeps the global model it held (it trained in place), so the run goes on."""
    suite = {k: v for k, v in SUITE.items() if k != "configurations"}
    suite = {
        **suite,
        "data": {"dataset": "digits", "clients": 2},
        "training": {**SUITE["training"], "rounds": 1},
        "network": {"clients": SLOW},
        "configurations": [{"mode": "raw"}],
    }
    Runner(parse_suite(suite), tmp_path / "run").run()
    (only,) = read_records(tmp_path / "run" / "results.jsonl", kind="round").records
    assert only.skipped and only.arrived == 0 and only.dropped == {"0": "late", "1": "late"}
