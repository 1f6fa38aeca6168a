"""LoRA adapters under every protection, end to end on the local runtime (the tiny pretrained decoder, 3 Shakespeare
roles, one round): each aggregate equals plaintext FedAvg of the adapters within the protection's stated
precision, the aggregator receives the adapters and nothing of the frozen base, and the run folder keeps what
attacks and reports need."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

from hebench.analysis.summary import summarize_run
from hebench.cli.render.summary import print_summary
from hebench.config import parse_suite
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.crypto.wire import unpack
from hebench.fl.streams import whole_updates
from hebench.models.language.pretrained import TINY_BASE, load_pretrained_base
from hebench.models.language.run_files import load_run_model
from hebench.models.shared import shared_tensors
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")]

CLIENTS, ADAPTERS = 3, 2 * 4 * (128 + 3 * 128)  # LoRA rank 4 on c_attn of the tiny decoder's 2 layers
COMPACT = {"bits": 16, "clip": 2.0, "max_summands": 2048}
SUITE = {
    "name": "lora-protections",
    "seed": 2,
    "data": {"dataset": "shakespeare", "clients": CLIENTS},
    "model": {"name": "gpt2_tiny", "pretrained": True, "fine_tuning": {"kind": "lora", "rank": 4}},
    "training": {"rounds": 1, "local_steps": 2, "batch_size": 4, "optimizer": "adamw", "lr": 0.003},
    "runtime": {"hosting": "pool", "workers": 1},
    "measure": {"transcripts": True},
    "text_leakage": False,  # costs and aggregates here; the text attacks' records: tests/inversion/text
    "configurations": [
        {"mode": "raw"},
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        {"name": "compact", "mode": "host-he", "adapter": "seal-bfv", "params": COMPACT},
        {"mode": "offload", "adapter": "tenseal-ckks"},
        {"mode": "decryptor-he", "adapter": "tenseal-ckks"},
        {"name": "selective", "mode": "host-he", "adapter": "tenseal-ckks", "selective": {"ratio": 0.1, "samples": 2}},
        {"name": "secagg", "mode": "secagg"},
        {"name": "secret-sharing", "mode": "secret-sharing", "params": {"aggregators": 3}},
        {"name": "dp", "mode": "raw", "dp": {"level": "client", "clip": 1.0, "noise_multiplier": 0.01}},
        {"name": "tls", "mode": "raw", "transport": "tls"},
    ],
}
# each protection's stated precision against plaintext FedAvg of the same (noised, for DP) adapter updates
PRECISION = {
    "raw": 1e-6,
    "tls": 1e-6,
    "dp": 1e-6,
    "host-he/tenseal-ckks": 1e-4,
    "selective": 1e-4,
    "decryptor-he/tenseal-ckks": 1e-4,
    "offload/tenseal-ckks": 1e-5,
    "secagg": CLIENTS * 2 * 8.0 / 2**22,  # clipping range 8, 2^22 levels, one step per client
    "secret-sharing": 8.0 / (2**23 - 1),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lora")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def _records(run: Path, kind: str) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records if r.kind == kind]


def test_every_protections_aggregate_of_the_adapters_equals_plaintext_fedavg_within_its_precision(run):
    keygen = next(r for r in _records(run, "keygen") if r["config"] == "compact")
    bounds = {**PRECISION, "compact": keygen["info"]["precision"]}
    rounds = {r["config"]: r for r in _records(run, "round")}
    assert set(rounds) == set(bounds)
    for label, bound in bounds.items():
        assert rounds[label]["max_abs_error"] is not None and rounds[label]["max_abs_error"] <= bound, label
    for config in _records(run, "configuration"):
        assert (config["update_parameters"], config["fine_tuning"]["kind"]) == (ADAPTERS, "lora")
        assert config["parameters"] == 675_328 + ADAPTERS


def test_each_round_reports_held_out_perplexity_and_loss(run):
    for r in _records(run, "round"):
        assert r["perplexity"] == pytest.approx(math.exp(r["loss"])) and 100 < r["perplexity"] < 300, r
    raw = next(r for r in _records(run, "round") if r["config"] == "raw")
    for label in ("host-he/tenseal-ckks", "secagg", "tls"):  # the same adapters: the same model, to precision
        other = next(r for r in _records(run, "round") if r["config"] == label)
        assert other["perplexity"] == pytest.approx(raw["perplexity"], rel=1e-3)


def test_the_summary_shows_perplexity_and_says_the_base_was_pretrained_centrally(run):
    rows = summarize_run(read_records(run / "results.jsonl").records)
    out = io.StringIO()
    print_summary(Console(file=out, width=80), rows)
    text = " ".join(out.getvalue().split())
    assert "held-out next-token quality" in text and "perplexity" in text
    assert "model gpt2_tiny (every configuration): its base pretrained centrally by hebench on public text" in text
    assert all(r.perplexity is not None and r.first_perplexity is not None for r in rows)
    (dp,) = [r for r in rows if r.config == "dp"]  # the ε its clients spent, beside the perplexity DP cost
    assert "DP ε" in text and "(at its δ)" in text and dp.dp_epsilon and f"{dp.dp_epsilon:.3g}" in text


def _received(run: Path, label: str) -> list:
    folder = run / "transcripts" / label.replace("/", "_")
    return [m for p in sorted(folder.glob("aggregator-from-client-*.bin")) for m in whole_updates(read_transcript(p))]


def test_the_aggregator_receives_the_adapters_and_no_byte_of_the_frozen_base(run):
    updates = _received(run, "raw")
    assert len(updates) == CLIENTS
    base = load_pretrained_base().model
    flat = [p.detach().reshape(-1) for _, p in base.named_parameters()]
    probes = [v[len(v) // 2 - 8 : len(v) // 2 + 8].numpy().astype("<f4").tobytes() for v in flat]  # 16 from the middle
    assert len(probes) == 2 + 2 * 12 + 2 and all(len(probe) == 64 for probe in probes)  # every frozen tensor
    shipped = (TINY_BASE / "model.safetensors").read_bytes()
    assert all(probe in shipped for probe in probes)  # the control: the scan finds them where the base is stored
    received = []
    for msg in updates:
        (part,) = msg.parts
        header, (values_bytes,) = unpack(CIPHERTEXT_MAGIC, part, "update")
        assert header["adapter"] == "plain"
        values = np.frombuffer(values_bytes, "<f4")
        assert len(values) == ADAPTERS and len(part) < 4 * ADAPTERS + 1024  # the adapters and a small header
        assert np.isfinite(values).all() and np.abs(values).max() < 1.0  # LoRA A (kaiming) and B (near 0) values
        assert not any(probe in part for probe in probes)  # 16 values from each frozen tensor: none on the wire
        received.append(values)
    model, _ = load_run_model(run, "raw", 0)
    global_adapters = torch.cat([p.detach().reshape(-1) for _, p in shared_tensors(model)]).numpy()
    weights = next(r for r in _records(run, "party_round") if r["config"] == "raw" and r["role"] == "aggregator")
    fedavg = sum(float(w) * received[int(i)] for i, w in weights["weights"].items())
    assert np.abs(global_adapters - fedavg).max() < 1e-6  # the checkpoint is FedAvg of exactly what was received


@pytest.mark.parametrize("label", ["host-he/tenseal-ckks", "compact", "decryptor-he/tenseal-ckks"])
def test_under_he_the_aggregator_receives_only_ciphertext_of_the_adapters(run, label):
    updates = _received(run, label)
    assert len(updates) == CLIENTS
    for msg in updates:
        assert msg.parts and all(part.startswith(CIPHERTEXT_MAGIC) for part in msg.parts)


def test_selective_encrypts_a_tenth_of_the_adapters_and_sends_the_rest_plain(run):
    agreed = next(r for r in _records(run, "mask_agreement") if r["config"] == "selective")
    assert agreed["encrypted_fraction"] == pytest.approx(0.1, abs=1 / ADAPTERS)
    mask = np.load(run / "masks" / "selective.npy")
    assert mask.shape == (ADAPTERS,)


def test_client_level_dp_records_epsilon_for_the_update_released(run):
    clients = [r for r in _records(run, "party_round") if r["config"] == "dp" and r["role"] == "client"]
    assert len(clients) == CLIENTS
    for c in clients:
        assert c["dp_steps"] == 1 and c["dp_sample_rate"] == 1.0 and c["dp_epsilon"] > 0 and c["dp_delta"] == 1e-5


def test_the_run_folder_keeps_the_tokenizer_and_the_model_description(run):
    described = json.loads((run / "language-model.json").read_text())
    assert described["decoder"] == "gpt2_tiny" and described["vocab_size"] == 2048
    assert {c["update_parameters"] for c in described["configurations"].values()} == {ADAPTERS}
    assert (run / "tokenizer" / "vocab.json").is_file() and (run / "tokenizer" / "merges.txt").is_file()
    assert np.load(run / "checkpoints" / "raw" / "round-0.npy").shape == (ADAPTERS,)  # never the frozen base
