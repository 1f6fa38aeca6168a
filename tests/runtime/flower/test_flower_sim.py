"""``--engine flower-sim`` end to end: the same suite on the local runtime (a process per client, and a
pool) and on Flower's Simulation Engine trains the same sampled clients and gives the same aggregate
every round, and the simulated server never holds a secret key nor receives a plaintext update in host-HE.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.config import parse_suite
from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.errors import ParameterError
from hebench.net.limits import ENV_MAX_FRAME, PREAUTH_MAX_FRAME
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED
from tests.runtime.flower.sim_run import run_on_flower_sim

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
pytest.importorskip("ray", reason="flwr[simulation] (Ray) is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed"),
]

from hebench.runtime.flower.codec import CIPHER_STYPE, PLAIN_STYPE, content_from_bytes  # noqa: E402
from hebench.runtime.flower.simulation import FlowerSimRuntime  # noqa: E402

RAW, HOST_HE = "raw", "host-he_tenseal-ckks"
ROUNDS, CLIENTS, PER_ROUND = 2, 5, 3
HIDDEN, CHUNK = 8, 512  # 6,370 values: 13 chunks in raw, 2 ciphertext chunks (4,096 slots) in CKKS
SUITE = {
    "name": "flower-sim-e2e",
    "seed": 5,
    "data": {"dataset": "digits", "clients": CLIENTS},
    "model": {"name": "mlp", "hidden": HIDDEN},
    "training": {"rounds": ROUNDS, "lr": 0.1, "clients_per_round": PER_ROUND},
    "configurations": [{"mode": "raw", "adapter": "plain"}, {"mode": "host-he", "adapter": "tenseal-ckks"}],
    "measure": {"transcripts": True, "timeout_s": 240},
    "runtime": {"chunk_values": CHUNK},
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    """The suite as a user runs it: ``hebench run SUITE --engine flower-sim``."""
    run, output = run_on_flower_sim(tmp_path_factory.mktemp("flower-sim"), SUITE)
    assert "Ray" not in output and "INFO" not in output  # Ray's and Flower's noise went to the logs
    return run


@pytest.fixture(scope="module", params=["process", "pool"])
def local(request, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp(f"local-{request.param}")
    runtime = {"hosting": request.param, "chunk_values": CHUNK, **({"workers": 2} if request.param == "pool" else {})}
    Runner(parse_suite({**SUITE, "runtime": runtime, "measure": {"timeout_s": 240}}), out).run()
    return out


def _records(run: Path, kind: str) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records if r.kind == kind]


def _global(run: Path, label: str, r: int) -> np.ndarray:
    return np.load(run / "checkpoints" / label / f"round-{r}.npy")


def test_every_round_completes_with_records_marked_flower_sim(sim):
    configurations = _records(sim, "configuration")
    assert {c["config"]: c["runtime"] for c in configurations} == {
        "raw": "flower-sim",
        "host-he/tenseal-ckks": "flower-sim",
    }
    assert len(_records(sim, "round")) == 2 * ROUNDS
    parties = _records(sim, "party_round")
    clients = [p for p in parties if p["role"] == "client"]
    assert len(clients) == 2 * ROUNDS * CLIENTS and all(p["runtime"] == "flower-sim" for p in parties)
    # virtual nodes share Ray workers: each is charged its own thread's CPU, never the worker's
    assert all(c["cpu_accounting"] == "thread" and c["worker"].startswith("flower-sim-") for c in clients)
    trained = [c for c in clients if "train" in c["phases"]]
    assert len(trained) == 2 * ROUNDS * PER_ROUND and all(c["phases"]["train"]["cpu_s"] > 0 for c in trained)
    assert all(c.get("process_cpu_s") is None for c in clients)
    assert all(c["bytes_sent"] > 0 and c["bytes_received"] > 0 for c in clients)
    servers = [p for p in parties if p["role"] == "aggregator"]
    assert len(servers) == 2 * ROUNDS and all(s["cpu_accounting"] == "thread" for s in servers)
    assert all(s["phases"]["aggregate"]["cpu_s"] > 0 and s["bytes_received"] > 0 for s in servers)
    assert (sim / "flower-logs" / "raw.log").stat().st_size > 0


def test_the_hub_records_every_key_set_it_served(sim):
    service = {r["config"]: r for r in _records(sim, "key_service")}
    assert set(service) == {"raw", "host-he/tenseal-ckks"}
    he = service["host-he/tenseal-ckks"]
    # a node fetches its key set once per epoch and keeps it (its worker process may load it once more), where
    # a fresh fetch per message would serve ROUNDS * (PER_ROUND + CLIENTS) = 16; the server fetches once
    workers = min(len(os.sched_getaffinity(0)), CLIENTS)  # the simulation's Ray workers
    assert CLIENTS <= he["secret_sets"] <= CLIENTS + workers < ROUNDS * (PER_ROUND + CLIENTS)
    assert he["public_sets"] == 1
    sizes = next(r["key_bytes"] for r in _records(sim, "keygen") if r["config"] == "host-he/tenseal-ckks")
    assert he["bytes_sent"] == he["secret_sets"] * sizes["secret_set"] + sizes["public_set"]
    assert he["cpu_s"] > 0 and he["role"] == "key_authority" and he["runtime"] == "flower-sim"


def test_flower_sim_trains_the_clients_the_local_runtime_samples(sim, local):
    def selected(run: Path) -> dict[tuple[str, int], list[int]]:
        records = _records(run, "party_round")
        return {(p["config"], p["round"]): p["selected"] for p in records if p["role"] == "aggregator"}

    want = selected(local)
    assert len(want) == 2 * ROUNDS and all(len(chosen) == PER_ROUND for chosen in want.values())
    assert len({tuple(chosen) for chosen in want.values()}) > 1  # the sample changes between rounds
    assert selected(sim) == want
    trained = {(p["config"], p["round"], p["client"]) for p in _records(sim, "party_round") if "train" in p["phases"]}
    assert trained == {(c, r, i) for (c, r), chosen in want.items() for i in chosen}


def test_flower_sim_yields_the_local_runtimes_aggregate_every_round(sim, local):
    precision = create_adapter("tenseal-ckks", {}).info().precision
    for r in range(ROUNDS):
        # raw: the same updates summed in the same client order, bit for bit
        np.testing.assert_array_equal(_global(sim, RAW, r), _global(local, RAW, r))
        # host-he: each run's aggregate is within CKKS's precision of plaintext FedAvg; round 1 trains from them
        np.testing.assert_allclose(
            _global(sim, HOST_HE, r), _global(local, HOST_HE, r), atol=2 * precision if r == 0 else 1e-4
        )
    for run in (sim, local):
        errors = [r["max_abs_error"] for r in _records(run, "round") if r["config"] == "host-he/tenseal-ckks"]
        assert len(errors) == ROUNDS and all(0 < e <= precision for e in errors)
    want = {(r["config"], r["round"]): r["accuracy"] for r in _records(local, "round")}
    got = {(r["config"], r["round"]): r["accuracy"] for r in _records(sim, "round")}
    assert got == pytest.approx(want, abs=0.01)


def test_the_simulated_server_never_holds_or_receives_the_secret_key(sim):
    folder = sim / "transcripts" / HOST_HE
    keys = [m for m in read_transcript(folder / "client-0-keys.bin") if m.kind == "keys"]
    secret = load_adapter(keys[0].parts[0]).secret_key_bytes()
    server_keys = read_transcript(folder / "aggregator-keys.bin")
    assert [m.kind for m in server_keys] == ["keys"] and not load_adapter(server_keys[0].parts[0]).has_secret_key
    received = (folder / "aggregator-keys.bin").read_bytes() + (folder / "aggregator-from-flower.bin").read_bytes()
    windows = [secret[i : i + 32] for i in range(0, len(secret) - 32, max(len(secret) // 8, 1))]
    assert secret not in received and not any(w in received for w in windows)
    assert secret in (folder / "client-0-keys.bin").read_bytes()  # the scan finds the key where it does travel
    closing = _records(sim, "flower_run")
    assert len(closing) == 2 and not any(r["holds_secret_key"] for r in closing)


@pytest.mark.parametrize(("label", "stype"), [(HOST_HE, CIPHER_STYPE), (RAW, PLAIN_STYPE)])
def test_host_he_updates_reach_the_simulated_server_as_ciphertext_only(sim, label, stype):
    replies = read_transcript(sim / "transcripts" / label / "aggregator-from-flower.bin")
    updates = [content_from_bytes(m.parts[0]) for m in replies if m.meta["type"] == "train"]
    assert len(updates) == ROUNDS * PER_ROUND
    values = 28 * 28 * HIDDEN + HIDDEN + HIDDEN * 10 + 10  # digits as 28x28 images
    chunks = -(-values // CHUNK) if stype == PLAIN_STYPE else -(-values // 4096)
    for content in updates:
        arrays = content.array_records["arrays"]
        assert arrays and all(a.stype == stype for a in arrays.values())
        assert len(arrays) == chunks  # one Array per streamed chunk, as the local runtime cuts it
        if stype == CIPHER_STYPE:
            assert all(a.data.startswith(CIPHERTEXT_MAGIC) for a in arrays.values())


def test_offload_is_refused_with_the_reason_and_what_to_use(tmp_path):
    suite = parse_suite({**SUITE, "configurations": [{"mode": "offload", "adapter": "tenseal-ckks"}]})
    with pytest.raises(ParameterError, match="offload engine beside each client") as err:
        Runner(suite, tmp_path, runtime=FlowerSimRuntime()).run()
    assert "--engine flower" in err.value.fix


def test_a_frame_limit_below_one_update_does_not_fail_a_flower_run(tmp_path, monkeypatch):
    """64 KiB frames, a 204 kB update: Flower carries it in Array chunks, the hub takes its oracle copy in slices."""
    monkeypatch.setenv(ENV_MAX_FRAME, str(PREAUTH_MAX_FRAME))
    suite = {
        **SUITE,
        "model": {"name": "mlp", "hidden": 64},  # 50,890 values
        "training": {"rounds": 1, "lr": 0.1, "clients_per_round": PER_ROUND},
        "configurations": [{"mode": "raw", "adapter": "plain"}],
        "measure": {"timeout_s": 240},
    }
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(yaml.safe_dump(suite))
    out = tmp_path / "run"
    args = ["run", str(suite_file), "--engine", "flower-sim", "--out", str(out), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (done,) = _records(out, "round")
    assert done["max_abs_error"] <= 1e-6  # the hub rebuilt every oracle copy and checked the aggregate
    servers = [p for p in _records(out, "party_round") if p["role"] == "aggregator"]
    assert servers and all(min(s["update_bytes"].values()) > 2 * PREAUTH_MAX_FRAME for s in servers)
