"""Per-client cost of secure aggregation and secret sharing against the number of clients, beside host-HE.

The protocols run in-process on the real parameter count of CNN_DropOut (1,206,590 values): every
client of a round is a thread talking to the aggregator through in-memory channels that count
the bytes of each encoded frame (the wire format of the local runtime), each charged its own
thread's CPU. For 2, 8 and 32 clients: SecAgg+ on a ring (num_shares 3) with the full-key and
flwr-32bit mask generators, SecAgg with every client a neighbour (num_shares = clients), and
additive sharing to 2 and 4 aggregators; host-HE is one client's TenSEAL CKKS encrypt + serialize
(upload) and deserialize + decrypt, which do not depend on the number of clients. Slopes are
least-squares fits of per-client CPU and bytes over the client counts.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import numpy as np

from hebench.bench.registry import study
from hebench.crypto.registry import create_adapter, status
from hebench.fl.meter import PhaseMeter
from hebench.fl.roster import make_identities
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
from hebench.net.transport import encode as encode_frame
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import collect_secagg
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import combine, decode, encode, split

PARAMETERS = 1_206_590  # CNN_DropOut (models registry: cnn_dropout)
CLIENTS = (2, 8, 32)


class MemoryChannel:
    """One end of an in-memory connection with a transport channel's send/recv and byte counts."""

    def __init__(self, inbox: queue.Queue, outbox: queue.Queue, peer: str) -> None:
        self.inbox, self.outbox, self.peer = inbox, outbox, peer
        self.bytes_sent = self.bytes_received = 0

    def send(self, msg: Message) -> int:
        size = len(encode_frame(msg))
        self.bytes_sent += size
        self.outbox.put((size, msg))
        return size

    def recv(self, expect: str | None = None) -> Message:
        size, msg = self.inbox.get(timeout=600)
        self.bytes_received += size
        assert expect is None or msg.kind == expect, (expect, msg.kind)
        return msg


def pair(peer: str) -> tuple[MemoryChannel, MemoryChannel]:
    a, b = queue.Queue(), queue.Queue()
    return MemoryChannel(a, b, peer), MemoryChannel(b, a, "aggregator")


def _cpu_s(phases: dict[str, Any]) -> float:
    return sum(p["cpu_s"] for p in phases.values())


def secagg_cost(clients: int, params: SecAggParams, size: int = PARAMETERS) -> dict[str, Any]:
    """One SecAgg round with ``clients`` threads: mean per-client CPU per phase and bytes; the aggregator's."""
    rng = np.random.default_rng(0)
    vector = rng.normal(0, 0.05, size).astype(np.float32)
    ends = {i: pair(f"client {i}") for i in range(clients)}
    identities = make_identities(clients)  # the trusted set-up (secagg's active model signs with them)
    client_phases: dict[int, dict[str, Any]] = {}

    def client(i: int) -> None:
        meter = PhaseMeter(worker="bench")  # thread CPU
        SecAggClientRound(i, ends[i][1], params, meter, identity=identities[i]).run(vector, 10, {})
        client_phases[i] = meter.take()["phases"]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    meter = PhaseMeter(worker="bench")
    result = collect_secagg({i: e[0] for i, e in ends.items()}, params, meter)
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    agg_phases = meter.take()["phases"]
    assert np.abs(result.average - vector).max() < clients * 2 * params.clipping_range / params.quantization_range
    per_phase = {
        name: float(np.mean([client_phases[i][name]["cpu_s"] for i in range(clients)])) for name in client_phases[0]
    }
    return {
        "clients": clients,
        "neighbours": params.neighbours(clients),
        "client_cpu_s": float(np.mean([_cpu_s(p) for p in client_phases.values()])),
        "client_cpu_s_by_phase": per_phase,
        "client_bytes_sent": float(np.mean([e[1].bytes_sent for e in ends.values()])),
        "client_bytes_received": float(np.mean([e[1].bytes_received for e in ends.values()])),
        "aggregator_cpu_s": _cpu_s(agg_phases),
        "aggregator_cpu_s_by_phase": {k: v["cpu_s"] for k, v in agg_phases.items()},
        "round_wall_s": wall,
        "work_factor_bits": params.security(clients)["work_factor_bits"],
    }


def sharing_cost(clients: int, params: SecretSharingParams, size: int = PARAMETERS) -> dict[str, Any]:
    """Additive sharing: one client's encode + split + reconstruct; one aggregator's sum of ``clients`` shares."""
    rng = np.random.default_rng(0)
    vector = rng.normal(0, 0.05, size).astype(np.float32)
    t0 = time.thread_time()
    shares = split(encode(vector, 10, params, rng), params.aggregators)
    share_cpu = time.thread_time() - t0
    sent = sum(len(encode_frame(Message(MessageKind.SHARE, {"round": 0}, (s.tobytes(),)))) for s in shares)
    t0 = time.thread_time()
    total = combine([shares[0]] * clients)  # one aggregator's work: add ``clients`` shares
    agg_cpu = time.thread_time() - t0
    t0 = time.thread_time()
    rebuilt = decode(combine(shares), 10, params)
    rebuild_cpu = time.thread_time() - t0
    assert total.shape == shares[0].shape and np.abs(rebuilt - vector).max() < params.clip
    return {
        "clients": clients,
        "aggregators": params.aggregators,
        "client_cpu_s": share_cpu + rebuild_cpu,
        "client_cpu_s_by_phase": {"share": share_cpu, "reconstruct": rebuild_cpu},
        "client_bytes_sent": float(sent),
        "client_bytes_received": float(sent),  # one share-sum back from each aggregator, same size
        "aggregator_cpu_s": agg_cpu,
    }


def host_he_cost(size: int = PARAMETERS, adapter_name: str = "tenseal-ckks") -> dict[str, Any] | None:
    """One host-HE client's upload (encrypt + serialize) and download (deserialize + decrypt) of the same vector."""
    if not status(adapter_name).available:
        return None
    adapter = create_adapter(adapter_name, {})
    adapter.keygen()
    vector = np.random.default_rng(0).normal(0, 0.05, size).astype(np.float32)
    t0 = time.thread_time()
    blob = adapter.serialize(adapter.encrypt(vector))
    up = time.thread_time() - t0
    t0 = time.thread_time()
    adapter.decrypt(adapter.deserialize(blob))
    down = time.thread_time() - t0
    sent = len(encode_frame(Message(MessageKind.UPDATE, {"round": 0}, (blob,))))
    return {
        "adapter": adapter_name,
        "client_cpu_s": up + down,
        "client_cpu_s_by_phase": {"encrypt+serialize": up, "deserialize+decrypt": down},
        "client_bytes_sent": float(sent),
        "client_bytes_received": float(sent),
    }


def _slopes(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per-client CPU and bytes per extra client in the round (least squares over the client counts)."""
    n = [r["clients"] for r in rows]
    return {
        "client_cpu_s_per_client": float(np.polyfit(n, [r["client_cpu_s"] for r in rows], 1)[0]),
        "client_bytes_per_client": float(np.polyfit(n, [r["client_bytes_sent"] for r in rows], 1)[0]),
    }


@study("protections_scale")
def protections_scale(clients: tuple[int, ...] = CLIENTS, size: int = PARAMETERS) -> dict[str, Any]:
    """Per-client CPU and bytes of SecAgg+, SecAgg and secret sharing against the number of clients, beside host-HE."""
    variants = {
        "secagg+/ring3/full-key": lambda n: SecAggParams(num_shares=3, reconstruction_threshold=2),
        "secagg+/ring3/flwr-32bit": lambda n: SecAggParams(num_shares=3, reconstruction_threshold=2, prg="flwr-32bit"),
        "secagg/all-neighbours/full-key": lambda n: SecAggParams(num_shares=n, reconstruction_threshold=n // 2 + 1),
    }
    result: dict[str, Any] = {"benchmark": "protections_scale", "parameters": size, "clients": list(clients)}
    series: dict[str, Any] = {}
    for name, make in variants.items():
        rows = [secagg_cost(n, make(n), size) for n in clients]
        series[name] = {"rows": rows, "slope": _slopes(rows)}
    for k in (2, 4):
        rows = [sharing_cost(n, SecretSharingParams(aggregators=k), size) for n in clients]
        series[f"secret-sharing/K{k}"] = {"rows": rows, "slope": _slopes(rows)}
    he = host_he_cost(size)
    if he is not None:
        series["host-he/tenseal-ckks"] = {
            "rows": [{**he, "clients": n} for n in clients],
            "slope": {"client_cpu_s_per_client": 0.0, "client_bytes_per_client": 0.0},
            "note": "independent of clients",
        }
    result["series"] = series
    full, flwr = series["secagg+/ring3/full-key"]["rows"], series["secagg+/ring3/flwr-32bit"]["rows"]
    result["full_key_vs_flwr_mask_cpu"] = [
        f["client_cpu_s_by_phase"]["masked_upload"] / w["client_cpu_s_by_phase"]["masked_upload"]
        for f, w in zip(full, flwr, strict=True)
    ]
    return result
