"""The names the local runtime gives a configuration's server-side processes (its certificates, links and
namespaces are issued by these names)."""

from __future__ import annotations

from hebench.config import Configuration


def helper_count(config: Configuration) -> int:
    """Helper processes beside the aggregator: share holders (the mode's params) or the spec's own (a decryptor)."""
    params = config.mode_params
    return params.extra_aggregators if params is not None else config.spec.helpers


def helper_names(config: Configuration) -> tuple[str, ...]:
    """The aggregator's helpers: ``aggregator-1`` … (secret sharing's share holders, decryptor-he's decryptor)."""
    return tuple(f"aggregator-{k}" for k in range(1, 1 + helper_count(config)))


def server_parties(config: Configuration) -> tuple[str, ...]:
    """Every server-side party of a configuration, each of which gets a namespace on the kernel backend: the
    aggregator, its helpers and the key authority."""
    return ("aggregator", *helper_names(config), "key_authority")
