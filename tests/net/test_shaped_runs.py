"""Shaped runs end to end: every channel of every mode crosses its party's link, and the records agree with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hebench.config import parse_suite
from hebench.links.plan import MBIT
from hebench.links.segments import HEADER, MSS
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = pytest.mark.slow  # end-to-end federated runs

CKKS = "tenseal-ckks" in INSTALLED
CLIENT = {"uplink_mbit": 40, "downlink_mbit": 80, "delay_ms": 2}
SERVER = {"uplink_mbit": 400, "downlink_mbit": 400}
TIERS = [{"share": 0.67, "link": CLIENT}, {"share": 0.33, "profile": "home-broadband", "compute_slowdown": 3}]
SUITE = {
    "name": "shaped",
    "seed": 2,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1, "lr": 0.1, "target_accuracy": 0.01},
    "configurations": [
        {"mode": "raw"},
        *(
            [
                {"mode": "host-he", "adapter": "tenseal-ckks"},
                {"mode": "offload", "adapter": "tenseal-ckks"},
                {"mode": "host-he", "adapter": "tenseal-ckks", "selective": {"mask": "sensitivity", "ratio": 0.1}},
                {"mode": "decryptor-he", "adapter": "tenseal-ckks"},  # its decryptor is aggregator-1
            ]
            if CKKS
            else []
        ),
        {"name": "secagg", "mode": "secagg", "params": {"num_shares": 3, "reconstruction_threshold": 2}},
        {"name": "secret-sharing", "mode": "secret-sharing", "params": {"aggregators": 3}},
        {"name": "tiers", "mode": "raw", "network": {"clients": CLIENT, "server": SERVER, "tiers": TIERS}},
    ],
    "network": {"clients": CLIENT, "server": SERVER},
    "runtime": {"hosting": "pool", "workers": 1},  # clients as threads, each bound to its own link
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shaped")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def records(run: Path) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records]


def party_rounds(run: Path) -> list[dict]:
    return [r for r in records(run) if r["kind"] == "party_round"]


def test_every_configuration_records_its_links(run):
    configs = [r for r in records(run) if r["kind"] == "configuration"]
    assert len(configs) == len(SUITE["configurations"])
    for rec in configs:
        if rec["config"] == "tiers":
            continue
        net = rec["network"]
        assert net["emulation"] == "userspace" and net["label"] == "up 40/down 80 Mbit/s, 2 ms"
        assert net["server"]["uplink_mbit"] == 400 and net["tiers"][0]["clients"] == [0, 1, 2]


def test_every_party_of_every_mode_crossed_its_own_link(run):
    """A channel that bypassed the shaper leaves a party without a ledger, or its bytes short of its count."""
    rows = party_rounds(run)
    labels = {r["config"] for r in records(run) if r["kind"] == "configuration"}
    assert {r["config"] for r in rows} == labels and len(labels) == len(SUITE["configurations"])
    for rec in rows:
        net, where = rec["network"], f"{rec['config']} {rec['role']} {rec.get('client')}"
        if rec["role"] == "client" and rec["config"] == "tiers":
            assert net["link"] in ("up 40/down 80 Mbit/s, 2 ms", "home-broadband"), where
        elif rec["role"] == "client":
            assert net["link"] == "up 40/down 80 Mbit/s, 2 ms", where
        else:
            assert net["link"] == "up 400/down 400 Mbit/s", where
        if rec["config"].startswith("offload"):
            continue
        if rec["config"].startswith("decryptor-he") and rec["role"] == "aggregator":  # its decryptor's channel counted
            decryptor = next(r for r in rows if r["config"] == rec["config"] and r["role"] == "aggregator-1")
            assert rec["bytes_sent"] > decryptor["bytes_received"] > 0, where
        assert net["up_bytes"] == rec["bytes_sent"] > 0, where
        assert net["down_bytes"] >= rec["bytes_received"] > 0, where  # host-he clients also receive keys


@pytest.mark.skipif(not CKKS, reason="offload needs TenSEAL")
def test_offload_pays_the_access_link_at_the_engine_and_nothing_between_host_and_engine(run):
    hosts = [r for r in party_rounds(run) if r["config"] == "offload/tenseal-ckks" and r["role"] == "client"]
    assert len(hosts) == 3
    for rec in hosts:
        net, engine = rec["network"], rec["engine"]
        assert net["up_bytes"] == net["down_bytes"] == 0  # the host only talks to its engine, inside the device
        assert net["on_device_bytes"] >= rec["bytes_sent"] + rec["bytes_received"] > 0  # and the "train" it got
        assert engine["network"]["link"] == "up 40/down 80 Mbit/s, 2 ms"
        assert engine["network"]["up_bytes"] >= engine["aggregator_bytes_sent"] > 0  # and the session's hello


def test_transfer_times_follow_the_links_rates_and_delays(run):
    """The ledger's busy times are bytes on the wire (payload and segment headers) over the rate; the time a
    party was held covers its uplink's busy time (the schedule guarantees it: not a timing threshold)."""
    for rec in party_rounds(run):
        net = rec["network"]
        up, down = (40, 80) if rec["role"] == "client" else (400, 400)
        if net["link"] == "home-broadband":
            up, down = 5, 20
        for direction, rate in (("up", up), ("down", down)):  # the payload and each segment's headers
            headers = net[f"{direction}_busy_s"] * rate * MBIT - net[f"{direction}_bytes"]
            segments = net[f"{direction}_bytes"] / MSS
            assert HEADER * segments - 1e-6 <= headers <= HEADER * (segments + net[f"frames_{direction}"]) + 1e-6
        assert net["transfer_s"] >= net["up_busy_s"] - 1e-9  # a sender is held at least while its bytes go out
        assert net["turns"] >= 2 or net["on_device_bytes"] > 0  # an offload host talks only to its engine


def test_time_to_accuracy_is_the_first_round_reaching_the_target(run):
    reached = [r for r in records(run) if r["kind"] == "time_to_accuracy"]
    walls = {r["config"]: r["round_wall_s"] for r in party_rounds(run) if r["role"] == "aggregator" and r["round"] == 0}
    links = {r["config"]: r["network"]["label"] for r in records(run) if r["kind"] == "configuration"}
    assert {r["config"] for r in reached} == set(walls)
    for r in reached:
        assert r["round"] == 0 and r["wall_s"] == walls[r["config"]] and r["link"] == links[r["config"]]


def test_a_tier_has_its_share_of_the_clients_its_link_and_its_slower_compute(run):
    """Two of three clients on the first tier, one on the second, which computes 3 times slower: each of its
    phases lasts at least 3 times its CPU time (a thread's CPU time never exceeds its wall time)."""
    clients = [r for r in party_rounds(run) if r["config"] == "tiers" and r["role"] == "client"]
    tiers = {r["client"]: r["network"].get("tier") for r in clients}
    assert sorted(tiers.values()) == [0, 0, 1]
    config = next(r for r in records(run) if r["kind"] == "configuration" and r["config"] == "tiers")
    assert [t["clients"] for t in config["network"]["tiers"]] == [
        sorted(i for i, t in tiers.items() if t == 0),
        [i for i, t in tiers.items() if t == 1],
    ]
    slow = next(r for r in clients if r["network"].get("tier") == 1)
    assert slow["network"]["compute_slowdown"] == 3 and slow["network"]["link"] == "home-broadband"
    train = slow["phases"]["train"]
    assert train["wall_s"] >= 3 * train["cpu_s"] > 0
