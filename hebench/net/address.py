"""``HOST:PORT`` addresses, parsed the same way everywhere (engines, federations, hubs)."""

from __future__ import annotations

from hebench.errors import ParameterError

Address = tuple[str, int]


def parse_address(text: str, what: str = "address", example: str = "dpu0:7000") -> Address:
    """``HOST:PORT`` (``[::1]:7000`` for IPv6) as a tuple; a ParameterError naming ``what`` otherwise."""
    host, sep, port = str(text).rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ParameterError(f"{what} '{text}' is not HOST:PORT", f"write e.g. {example}")
    return host, int(port)
