"""Flower's own server and client code in one process: a ``Grid`` whose nodes are ``ClientApp`` calls, and a client
mod that makes chosen nodes stop replying at SecAgg+'s masked-upload stage (a dropout, answered as the SuperLink
answers for a node that stopped reporting)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any


class NodeStopped(Exception):
    """The node stopped replying (a dropout): the grid answers for it as the SuperLink does."""


def stop_at_masked_upload(stopped: set[int]) -> Callable[..., Any]:
    """A client mod: the nodes in ``stopped`` stop replying when asked for their masked upload."""
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage

    def mod(msg: Any, ctxt: Any, call_next: Callable[..., Any]) -> Any:
        configs = msg.content.config_records.get(RECORD_KEY_CONFIGS) if msg.has_content() else None
        stage = configs.get(Key.STAGE) if configs is not None else None
        if msg.metadata.dst_node_id in stopped and stage == Stage.COLLECT_MASKED_VECTORS:
            raise NodeStopped(msg.metadata.dst_node_id)
        return call_next(msg, ctxt)

    return mod


class InProcessGrid:
    """A Flower ``Grid`` whose nodes are ``ClientApp`` calls in this process; every message crosses as protobuf.

    Built by :func:`in_process_grid` (the class derives from Flower's ``Grid`` there, imported lazily)."""

    def __init__(self, client_app: Any, node_ids: list[int]) -> None:
        from flwr.app import Context, RecordDict
        from flwr.supercore.run import Run

        self.client_app = client_app
        self.node_ids = list(node_ids)
        self.contexts = {
            nid: Context(run_id=1, node_id=nid, node_config={}, state=RecordDict(), run_config={}) for nid in node_ids
        }
        self._run = Run.create_empty(1)
        self._replies: dict[str, Any] = {}
        self.bytes_sent = 0  # server -> clients, serialised messages
        self.bytes_received = 0  # clients -> server
        self.client_cpu_s = 0.0
        self._lock = threading.Lock()

    def set_run(self, run: Any) -> None:
        self._run = run

    @property
    def run(self) -> Any:
        return self._run

    def create_message(self, content: Any, message_type: str, dst_node_id: int, group_id: str, ttl: Any = None) -> Any:
        from flwr.app import Message

        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.node_ids)

    def push_messages(self, messages: Iterable[Any]) -> Iterable[str]:
        from flwr.common.serde import message_from_proto, message_to_proto
        from flwr.proto.message_pb2 import Message as ProtoMessage  # pylint: disable=no-name-in-module
        from flwr.server.superlink.linkstate.utils import create_message_error_unavailable_res_message

        outgoing = []
        for msg in messages:
            msg.metadata.__dict__["_message_id"] = str(uuid.uuid4())
            blob = message_to_proto(msg).SerializeToString()
            self.bytes_sent += len(blob)
            outgoing.append((msg, blob))
        workers = max(1, len(outgoing))
        with ThreadPoolExecutor(workers) as pool:
            answers = list(pool.map(lambda pair: self._deliver(pair[1]), outgoing))
        ids = []
        for (msg, _), answer in zip(outgoing, answers, strict=True):
            if answer is None:  # the node stopped replying: the SuperLink's reply for an unavailable node
                reply = create_message_error_unavailable_res_message(msg.metadata, "node_unavail")
            else:
                self.bytes_received += len(answer)
                reply = message_from_proto(ProtoMessage.FromString(answer))
            self._replies[msg.metadata.message_id] = reply
            ids.append(msg.metadata.message_id)
        return ids

    def _deliver(self, blob: bytes) -> bytes | None:
        """One node's side: read the message, run the ClientApp, write the reply (None: the node stopped)."""
        from flwr.common.serde import message_from_proto, message_to_proto
        from flwr.proto.message_pb2 import Message as ProtoMessage  # pylint: disable=no-name-in-module

        started = time.thread_time()
        try:
            msg = message_from_proto(ProtoMessage.FromString(blob))
            try:
                reply = self.client_app(msg, self.contexts[msg.metadata.dst_node_id])
            except NodeStopped:
                return None
            reply.metadata.__dict__["_message_id"] = str(uuid.uuid4())
            return message_to_proto(reply).SerializeToString()
        finally:
            with self._lock:
                self.client_cpu_s += time.thread_time() - started

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Any]:
        return [self._replies.pop(i) for i in message_ids if i in self._replies]

    def send_and_receive(self, messages: Iterable[Any], *, timeout: float | None = None) -> Iterable[Any]:
        return list(self.pull_messages(self.push_messages(messages)))


def in_process_grid(client_app: Any, node_ids: list[int]) -> Any:
    """An :class:`InProcessGrid` that is a Flower ``Grid`` (Flower's workflows check nothing more than the methods)."""
    from flwr.serverapp.grid import Grid

    cls = type("FlowerInProcessGrid", (InProcessGrid, Grid), {})
    return cls(client_app, node_ids)


@contextmanager
def as_server_app(run_id: int) -> Iterator[None]:
    """The process-wide identity Flower's messages read (set as ``flwr.server.compat.app`` sets it), Flower's INFO
    log silenced (a halted round is recorded in the row instead), both restored afterwards."""
    from flwr.common.constant import SUPERLINK_NODE_ID
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, SUPERLINK_NODE_ID
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
        TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved
