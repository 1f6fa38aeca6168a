"""Training replies on the server, one at a time: pulled alone from Flower's Grid, read without Flower's views.

Flower's ``Grid.send_and_receive`` hands a strategy every reply of a round at once; :func:`pulled_one_by_one`
pulls each reply by its own message ID and hands it on before pulling the next, so the server holds one.
:func:`record_of` reads a reply's records directly: Flower's typed views (``RecordDict.metric_records`` and
its siblings) hold their RecordDict in a reference cycle, which would keep a read reply in memory.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TypeVar

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid

R = TypeVar("R", ArrayRecord, ConfigRecord, MetricRecord)


def record_of(content: RecordDict, key: str, kind: type[R]) -> R | None:
    """``content[key]`` if it is a ``kind`` record. Read without Flower's typed views (``metric_records`` ...):
    a view holds its RecordDict in a reference cycle, so a reply read through one stays in memory, update and
    all, until Python's cyclic collector happens to run."""
    record = content.get(key)
    return record if isinstance(record, kind) else None


def pulled_one_by_one(grid: Grid, ids: list[str], timeout: float, poll_s: float) -> Iterator[Message]:
    """The replies to the messages ``ids``, each pulled alone (its own ``pull_messages`` call) and handed on before
    the next is pulled, in the order they come in; stops at ``timeout`` (the caller names who did not reply)."""
    pending, deadline = list(ids), time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        came = False
        for message_id in list(pending):
            got = list(grid.pull_messages([message_id]))
            if got:
                pending.remove(message_id)
                came = True
            while got:
                reply = got.pop()
                yield reply
                del reply
        if not came:
            time.sleep(poll_s)
