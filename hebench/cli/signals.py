"""Stop signals as an exception, so a command that started processes ends them however it is told to stop."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C; kill, a service manager, a CI timeout; hangup


class Stopped(KeyboardInterrupt):
    """A stop signal arrived (inside :func:`stop_signals_raise`)."""

    def __init__(self, signum: int) -> None:
        self.signal_name = signal.Signals(signum).name
        super().__init__(self.signal_name)


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Inside the block, the first SIGINT, SIGTERM or SIGHUP raises :class:`Stopped` in the main thread, and later
    ones are ignored while the block cleans up; SIGINT too where it was inherited ignored (every background job of
    a non-interactive shell starts so). The previous handlers are restored on leaving."""
    raised = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
