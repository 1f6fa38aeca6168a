"""Peak resident memory of this process.

``getrusage``'s ``ru_maxrss`` survives ``execve`` on Linux: a process started
with multiprocessing's spawn (fork, then exec of a fresh interpreter) reports
at least its parent's RSS at the fork, even if it never grew that large. The
kernel's high-water mark of the process's own address space (``VmHWM`` in
``/proc/self/status``) starts afresh at exec, so it is used where it exists.
"""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_bytes() -> int:
    """This process's peak RSS: ``VmHWM`` where /proc has it, else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
