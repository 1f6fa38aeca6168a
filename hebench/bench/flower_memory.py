"""The Flower server's peak memory against the number of clients (issue #30's aggregator-memory goal).

Two measurements. ``strategy``: hebench's Flower strategy alone (:class:`~hebench.runtime.flower.strategy.HEFedAvg`)
summing N CKKS replies from a stand-in Grid, each reply a fresh copy of one encrypted update built when it is
pulled, in a fresh process per row, its peak RSS (``VmHWM``, reset before the step) over the training step:
``streamed`` (the strategy's own loop: each reply pulled alone and dropped after it is added) against
``whole`` (every reply gathered first, as Flower's ``send_and_receive`` hands them over). ``flower_sim``: the
same one-round CKKS suite on ``--engine flower-sim`` with few and more clients, the server process's peak
RSS, which also holds Flower's SuperLink state, the evaluate messages and Ray's driver. Each reports
``extra_updates_held``: the peak's growth from the smallest to the largest count over one update's bytes
(about 0 when replies are streamed; the added clients' count when all are held).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hebench.bench.registry import study
from hebench.config import parse_suite
from hebench.results import read_records
from hebench.results.records import PartyRoundRecord
from hebench.runtime.flower import require_flower
from hebench.runtime.runner import Runner


def memory_suite(clients: int, hidden: int, adapter: str) -> dict[str, Any]:
    return {
        "name": "bench-flower-memory",
        "data": {"dataset": "digits", "clients": clients},
        "model": {"name": "mlp", "hidden": hidden},
        "training": {"rounds": 1, "local_steps": 1, "lr": 0.1},
        "configurations": [{"mode": "host-he", "adapter": adapter}],
        "measure": {"timeout_s": 1800, "decryption_error": False},
        "runtime": {"workers": 2},
    }


def server_row(run_dir: Path) -> dict[str, Any]:
    """The server's peak RSS and the uploads it received, from a run's records."""
    records = [r for r in read_records(run_dir / "results.jsonl").records if isinstance(r, PartyRoundRecord)]
    (server,) = [r for r in records if r.role == "aggregator"]
    uploads = list((server.update_bytes or {}).values())
    return {
        "server_peak_rss_bytes": server.peak_rss_bytes,
        "update_bytes": max(uploads),
        "updates_received": len(uploads),
    }


@study("flower_memory")
def flower_memory(clients: tuple[int, ...] = (2, 6), hidden: int = 512, adapter: str = "tenseal-ckks") -> dict:
    """The Flower server's peak memory with 2 and 6 CKKS clients: the strategy alone (streamed vs whole)
    and flower-sim (hebench[flower])."""
    require_flower()
    return {
        "strategy": strategy_memory(clients, hidden, adapter),
        "flower_sim": flower_sim_memory(clients, hidden, adapter),
    }


def flower_sim_memory(clients: tuple[int, ...], hidden: int, adapter: str) -> dict:
    from hebench.runtime.flower.simulation import FlowerSimRuntime

    rows = []
    for n in clients:
        with tempfile.TemporaryDirectory(prefix="hebench-bench-flower-memory-") as tmp:
            Runner(parse_suite(memory_suite(n, hidden, adapter)), Path(tmp), runtime=FlowerSimRuntime()).run()
            rows.append({"clients": n, **server_row(Path(tmp))})
    low, high = rows[0], rows[-1]
    growth = high["server_peak_rss_bytes"] - low["server_peak_rss_bytes"]
    return {
        "engine": "flower-sim",
        "adapter": adapter,
        "model": f"mlp hidden {hidden}",
        "rows": rows,
        "extra_updates_held": growth / high["update_bytes"],
        "added_clients": high["clients"] - low["clients"],
        "note": "peak RSS of the simulation's server process (ServerApp, SuperLink state, Ray driver)",
    }


class _Grid:
    """A stand-in for Flower's Grid: N nodes; each pulled reply is a fresh copy of ``blobs`` (one update)."""

    def __init__(self, clients: int, blobs: tuple[bytes, ...]) -> None:
        self.clients, self.blobs, self.pushed = clients, blobs, {}

    def get_node_ids(self) -> list[int]:
        return [100 + i for i in range(self.clients)]

    def send_and_receive(self, messages: Any, timeout: float | None = None) -> list[Any]:
        from flwr.app import Message, MetricRecord, RecordDict

        from hebench.runtime.flower.plan import CLIENT

        replies = []
        for m in messages:  # the partition query
            metrics = MetricRecord({CLIENT: m.metadata.dst_node_id - 100, "num-examples": 10})
            replies.append(Message(RecordDict({"metrics": metrics}), reply_to=m))
        return replies

    def push_messages(self, messages: Any) -> list[str]:
        ids = []
        for m in messages:
            m.metadata.__dict__["_message_id"] = f"m{len(self.pushed)}"
            self.pushed[m.metadata.message_id] = m
            ids.append(m.metadata.message_id)
        return ids

    def pull_messages(self, message_ids: Any) -> list[Any]:
        from flwr.app import Message, MetricRecord, RecordDict

        from hebench.runtime.flower.codec import update_record
        from hebench.runtime.flower.plan import CLIENT

        replies = []
        for message_id in message_ids:
            asked = self.pushed[message_id]
            i = asked.metadata.dst_node_id - 100
            copies = tuple(bytes(bytearray(b)) for b in self.blobs)  # this reply's own bytes
            metrics = MetricRecord({CLIENT: i, "num-examples": 10})
            replies.append(
                Message(RecordDict({"arrays": update_record(copies, ()), "metrics": metrics}), reply_to=asked)
            )
        return replies


def _reset_peak() -> None:
    """Reset this process's ``VmHWM`` to its current RSS (Linux: ``clear_refs`` 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def _strategy_row(clients: int, hidden: int, adapter: str, whole: bool, out: Any) -> None:
    """Process entry: the strategy's training step over ``clients`` replies; puts (peak growth, update bytes)."""
    import numpy as np
    from flwr.app import ArrayRecord, ConfigRecord
    from flwr.supercore.task_identity import TaskIdentity

    from hebench.crypto import create_adapter, load_adapter
    from hebench.fl.cipher import KeyHolderCipher
    from hebench.fl.meter import PhaseMeter
    from hebench.measure.memory import peak_rss_bytes
    from hebench.runtime.flower.plan import FlowerPlan
    from hebench.runtime.flower.replies import pulled_one_by_one
    from hebench.runtime.flower.strategy import HEFedAvg

    for field in ("_run_id", "_node_id", "_task_id"):  # what a ServerApp process has set
        setattr(TaskIdentity, field, 1)
    suite = parse_suite(memory_suite(clients, hidden, adapter))
    keys = create_adapter(adapter, {})
    keys.keygen()
    public = keys.export_keys(secret=False)
    size = 28 * 28 * hidden + hidden + hidden * 10 + 10
    vector = np.random.default_rng(0).normal(0, 0.1, size).astype(np.float32)
    blobs = tuple(KeyHolderCipher(lambda e: keys, require_secret=True).encrypt_stream([vector], 0, PhaseMeter(), 65536))
    del vector

    class Hub:
        def adapter(self, epoch: int, secret: bool) -> Any:
            return load_adapter(public)

        def record(self, record: dict) -> None:
            pass

    plan = FlowerPlan(suite, 0, "bench", ("127.0.0.1", 1), ("127.0.0.1", 2), tempfile.gettempdir())
    strategy = HEFedAvg(plan, Hub())  # type: ignore[arg-type]
    strategy.POLL_S = 0.0
    grid = _Grid(clients, blobs)
    strategy.adapter(0)
    strategy._partitions(grid)  # type: ignore[arg-type]
    _reset_peak()
    before = peak_rss_bytes()
    if whole:  # every reply gathered first, as Flower's send_and_receive hands them over
        messages = list(strategy.configure_train(1, ArrayRecord(), ConfigRecord(), grid))  # type: ignore[arg-type]
        chosen = [strategy._partition_of[m.metadata.dst_node_id] for m in messages]
        replies = list(pulled_one_by_one(grid, list(grid.push_messages(messages)), 60, 0.0))  # type: ignore[arg-type]
        strategy.aggregate_replies(1, chosen, iter(replies))
    else:
        strategy.train_round(1, grid, 60)  # type: ignore[arg-type]
    out.put((peak_rss_bytes() - before, sum(len(b) for b in blobs)))


def strategy_memory(clients: tuple[int, ...], hidden: int, adapter: str) -> dict:
    import multiprocessing as mp

    spawn = mp.get_context("spawn")
    rows = []
    for whole in (False, True):
        for n in clients:
            out = spawn.Queue()
            process = spawn.Process(target=_strategy_row, args=(n, hidden, adapter, whole, out))
            process.start()
            growth, update = out.get(timeout=1800)
            process.join()
            rows.append(
                {
                    "clients": n,
                    "replies": "whole" if whole else "streamed",
                    "peak_growth_bytes": growth,
                    "update_bytes": update,
                }
            )
    result: dict[str, Any] = {"adapter": adapter, "model": f"mlp hidden {hidden}", "rows": rows}
    for kind in ("streamed", "whole"):
        mine = [r for r in rows if r["replies"] == kind]
        result[f"extra_updates_held_{kind}"] = (mine[-1]["peak_growth_bytes"] - mine[0]["peak_growth_bytes"]) / mine[
            -1
        ]["update_bytes"]
    result["added_clients"] = clients[-1] - clients[0]
    return result
