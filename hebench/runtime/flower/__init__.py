"""hebench on Flower's deployment engine (the ``hebench[flower]`` extra).

A ClientApp trains with hebench's client code; an outermost client mod
encrypts the outgoing update (host-he) or hands it to the node's offload
engine (offload) and decrypts the incoming aggregate; a server Strategy sums
ciphertext bytes with public keys only. Keys and measurement records go
through a hub that the run's driver starts (the key authority and the record
sink), never through the SuperLink.
"""

from __future__ import annotations

from hebench.errors import AdapterUnavailableError


def require_flower() -> None:
    """Raise a clear error when the Flower extra is not installed."""
    try:
        import flwr  # noqa: F401
    except ImportError as err:
        raise AdapterUnavailableError(
            f"Flower is not installed ({err})", "pip install 'hebench[flower]' (flwr[simulation]>=1.41)"
        ) from None
