"""A rough estimate of how long a suite's run takes, from short probes on this machine, without running it.

How it is estimated: the data is loaded and the model's parameters counted as a run would; one training step
of the model on one batch is timed here and multiplied by the steps a round takes, the selected clients sharing
this machine's cores; each adapter's key generation, encrypt, serialize, deserialize, add and decrypt are timed
here on one probe vector and scaled to the ciphertexts the model's parameters fill (the aggregator deserializes
and adds every client's upload in turn); one party process's start-up is timed here and multiplied by the
processes a configuration starts over the cores; shaped links add their transfer times and delays.

It is rough: CPU contention from other work, protocol rounds beyond encryption (secagg's masks, secret shares,
the decryptor), DP-SGD's per-sample clipping, stragglers, dropouts, per-round evaluation and the attacks are not
modelled (the attacks' size is reported beside the estimate).
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hebench.config import Configuration, Suite
from hebench.config.runtime import AUTO_POOL_ABOVE

HOW = (
    "rough: one training step, each adapter's keygen/encrypt/serialize/add/decrypt and one party's start-up "
    "timed on this machine, scaled by the model's parameters, the steps of a round, the clients per round over "
    "the cores, the rounds and the configurations; links from their rates and delays. Not modelled: contention, "
    "protocol rounds beyond encryption, DP-SGD, stragglers, dropouts, evaluation, attacks"
)
PROBE_VALUES = 4096  # the least values an adapter is timed on (one ciphertext where its slots hold more)
PARTY_MODULES = "hebench.fl.client, hebench.fl.aggregator"  # what a party process imports before it works


@dataclass(frozen=True)
class AdapterCost:
    """One adapter's measured costs here: seconds per ciphertext of each operation, and its key generation."""

    keygen_s: float
    slots: int
    encrypt_s: float
    serialize_s: float
    deserialize_s: float
    add_s: float
    decrypt_s: float
    bytes_per_value: float


@dataclass(frozen=True)
class ConfigurationEstimate:
    label: str
    start_s: float  # its processes' start-up and key generation
    train_s: float  # per round
    crypto_s: float  # per round: encryption at the clients, the sum at the aggregator, decryption
    links_s: float  # per round: transfer times and delays of shaped links (0: loopback or modelled)
    total_s: float


@dataclass(frozen=True)
class SuiteEstimate:
    suite: str
    parameters: int
    clients: int
    clients_per_round: int
    rounds: int
    cores: int
    step_s: float  # one training step, measured here
    party_start_s: float  # one party process's start-up, measured here
    configurations: tuple[ConfigurationEstimate, ...]
    attack_restarts: int  # restarts the privacy block runs against each attacked view (not in total_s)
    attack_steps: int | None  # steps of each (None: the attack's default)
    total_s: float
    how: str = HOW

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def estimate_suite(suite: Suite) -> SuiteEstimate:
    """Probe this machine and estimate ``suite``'s run (its data loaded, the model checked against memory)."""
    from hebench.data.registry import load_federated
    from hebench.models import count_parameters
    from hebench.models.size import check_fits

    data = load_federated(suite.data, suite.seed)
    suite = suite.with_clients(len(data.clients))
    params = count_parameters(suite.model.name, data.input_shape, data.num_classes, suite.model.hidden)
    check_fits(suite.model.name, suite.model.hidden, params)  # before any probe builds it
    cores = len(os.sched_getaffinity(0))
    clients = len(data.clients)
    per_round = suite.training.selected_count(clients)
    step_s = _training_step_s(suite, data)
    start_s = _party_start_s()
    steps = max(_steps(len(c), suite) for c in data.clients)
    train_s = step_s * steps * math.ceil(per_round / cores)
    costs: dict[tuple[str, str], AdapterCost] = {}
    rows = []
    for config in suite.configurations:
        key = (config.adapter, repr(sorted(config.adapter_params.items())))
        if key not in costs:
            costs[key] = _adapter_cost(config, params)
        cost = costs[key]
        encrypted = _encrypted_values(config, params)
        crypto_s = _crypto_round_s(cost, encrypted, per_round, cores)
        links_s = _links_round_s(suite, config, cost, encrypted, params, per_round)
        processes = _processes(suite, config, clients)
        keys = 1 + (suite.training.rounds - 1) // (suite.training.key_rotation_rounds or suite.training.rounds)
        start = start_s * math.ceil(processes / cores) + cost.keygen_s * keys
        total = start + suite.training.rounds * (train_s + crypto_s + links_s)
        rows.append(ConfigurationEstimate(config.label, start, train_s, crypto_s, links_s, total))
    privacy = suite.privacy
    restarts = privacy.images * privacy.seeds * privacy.restarts * len(privacy.threats) if privacy else 0
    return SuiteEstimate(
        suite=suite.name,
        parameters=params,
        clients=clients,
        clients_per_round=per_round,
        rounds=suite.training.rounds,
        cores=cores,
        step_s=step_s,
        party_start_s=start_s,
        configurations=tuple(rows),
        attack_restarts=restarts,
        attack_steps=privacy.steps if privacy else None,
        total_s=sum(r.total_s for r in rows),
    )


def _steps(samples: int, suite: Suite) -> int:
    spec = suite.training
    if spec.local_steps is not None:
        return spec.local_steps
    return spec.local_epochs * math.ceil(samples / spec.batch_size)


def _training_step_s(suite: Suite, data: Any) -> float:
    """The median of three timed steps (after one untimed) on one batch of the first client's data, on one thread
    as a party trains (idle OpenMP threads would spin)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _timed_steps(suite, data)
    finally:
        torch.set_num_threads(threads)


def _timed_steps(suite: Suite, data: Any) -> float:
    import torch

    from hebench.fl.training import make_optimizer
    from hebench.models import build_model

    torch.manual_seed(suite.seed)
    model = build_model(suite.model.name, data.input_shape, data.num_classes, suite.model.hidden)
    client = data.clients[0]
    x, y = client.x[: suite.training.batch_size], client.y[: suite.training.batch_size]
    opt = make_optimizer(model, suite.training)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for _ in range(4):
        start = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _party_start_s() -> float:
    """Wall seconds for a fresh interpreter to import what a party imports (its start-up)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {PARTY_MODULES}"], check=True, capture_output=True)
    return time.perf_counter() - start


def _adapter_cost(config: Configuration, parameters: int) -> AdapterCost:
    """Time one adapter's operations on a probe vector of whole ciphertexts (at most the model's values)."""
    from hebench.crypto.registry import create_adapter

    adapter = create_adapter(config.adapter, config.adapter_params)
    start = time.perf_counter()
    adapter.keygen()
    keygen_s = time.perf_counter() - start
    slots = max(1, adapter.slots)
    count = min(parameters, slots * math.ceil(PROBE_VALUES / slots))
    values = np.random.default_rng(0).uniform(-0.5, 0.5, count).astype(np.float32)
    timed: dict[str, float] = {}

    def run(name: str, fn: Any, *args: Any) -> Any:
        begin = time.perf_counter()
        out = fn(*args)
        timed[name] = time.perf_counter() - begin
        return out

    enc = run("encrypt", adapter.encrypt, values)
    blob = run("serialize", adapter.serialize, enc)
    back = run("deserialize", adapter.deserialize, blob)
    total = run("add", adapter.add, back, enc)
    run("decrypt", adapter.decrypt, total)
    texts = math.ceil(count / slots)
    per = {k: v / texts for k, v in timed.items()}
    return AdapterCost(
        keygen_s=keygen_s,
        slots=slots,
        encrypt_s=per["encrypt"],
        serialize_s=per["serialize"],
        deserialize_s=per["deserialize"],
        add_s=per["add"],
        decrypt_s=per["decrypt"],
        bytes_per_value=len(blob) / count,
    )


def _encrypted_values(config: Configuration, parameters: int) -> int:
    """Values a client encrypts: all, or a selective mask's share (a layer mask counted as all)."""
    selective = config.selective
    if selective is not None and selective.mask != "layers":
        return max(1, math.ceil(parameters * selective.ratio))
    return parameters


def _crypto_round_s(cost: AdapterCost, values: int, per_round: int, cores: int) -> float:
    """Clients encrypt, serialize, then deserialize and decrypt the aggregate in parallel over the cores; the
    aggregator deserializes and adds each upload, then serializes the sum."""
    texts = math.ceil(values / cost.slots)
    client = (cost.encrypt_s + cost.serialize_s + cost.deserialize_s + cost.decrypt_s) * texts
    aggregator = ((cost.deserialize_s + cost.add_s) * per_round + cost.serialize_s) * texts
    return client * math.ceil(per_round / cores) + aggregator


def _links_round_s(
    suite: Suite, config: Configuration, cost: AdapterCost, encrypted: int, parameters: int, per_round: int
) -> float:
    """A round's transfers on emulated links: each client's upload and the aggregate's download on the slowest
    client link, every upload through the server's link, and a request and a reply's delay each way."""
    network = suite.network_for(config)
    if network is None or network.emulation == "model":
        return 0.0
    update = encrypted * cost.bytes_per_value + (parameters - encrypted) * 4  # plaintext part: float32
    links = [network.clients] + [t.link_spec(network.clients) for t in network.tiers or ()]
    figures = [link.figures() for link in links if link is not None]
    server = network.server.figures() if network.server is not None else {}

    def seconds(size: float, mbit: float | None) -> float:
        return size * 8 / (mbit * 1e6) if mbit else 0.0

    up = max((seconds(update, f["uplink_mbit"]) for f in figures), default=0.0)
    down = max((seconds(update, f["downlink_mbit"]) for f in figures), default=0.0)
    delay = max((f["delay_ms"] or 0.0 for f in figures), default=0.0) / 1000
    through_server = seconds(update * per_round, server.get("downlink_mbit")) + seconds(
        update * per_round, server.get("uplink_mbit")
    )
    return up + down + through_server + 4 * delay


def _processes(suite: Suite, config: Configuration, clients: int) -> int:
    """Processes a configuration starts: clients (or pool workers), the aggregator and its helpers, the key
    authority, and an engine per client where the mode offloads."""
    pooled = suite.runtime.hosting == "pool" or (suite.runtime.hosting == "auto" and clients > AUTO_POOL_ABOVE)
    hosts = min(clients, suite.runtime.workers or len(os.sched_getaffinity(0))) if pooled else clients
    params = config.mode_params
    helpers = params.extra_aggregators if params is not None else config.spec.helpers
    engines = clients if config.spec.needs_engines and not suite.offload.engines else 0
    return hosts + 2 + helpers + engines
