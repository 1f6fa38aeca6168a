"""Bounds on what a peer may make a listener hold: frame sizes and handshake time.

Before a peer has authenticated it may send only small frames (a nonce, an
HMAC, a hello) and must finish within a deadline; afterwards a frame may be as
large as a model update. ``HEBENCH_MAX_FRAME_BYTES`` raises or lowers the bound
for every party of a run (child processes inherit it).
"""

from __future__ import annotations

import os

from hebench.errors import ParameterError

PREAUTH_MAX_FRAME = 64 * 1024  # anything read before the peer is authenticated
DEFAULT_MAX_FRAME = 1 << 30  # 1 GiB: a 1.2M-parameter CKKS update is about 100 MB
HANDSHAKE_S = 10.0  # connect, TLS and the key challenge together
SETUP_RETRY_S = 60.0  # a dialler pushed out of a busy door dials again until this has passed (by default)
ENV_MAX_FRAME = "HEBENCH_MAX_FRAME_BYTES"


def max_frame_bytes() -> int:
    """The bound on one authenticated frame: ``HEBENCH_MAX_FRAME_BYTES`` or 1 GiB."""
    raw = os.environ.get(ENV_MAX_FRAME, "").strip()
    if not raw:
        return DEFAULT_MAX_FRAME
    if not raw.isdigit() or int(raw) < PREAUTH_MAX_FRAME:
        raise ParameterError(
            f"{ENV_MAX_FRAME}={raw!r} is not a byte count of at least {PREAUTH_MAX_FRAME}",
            f"set it to a whole number of bytes, e.g. {ENV_MAX_FRAME}={DEFAULT_MAX_FRAME}, or unset it",
        )
    return int(raw)


class FrameTooLargeError(OSError):
    """A peer announced a frame above the bound; nothing was allocated for it."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"peer announced a {size}-byte frame, above the {limit}-byte limit")
        self.size, self.limit = size, limit
