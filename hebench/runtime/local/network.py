"""A configuration's network for the local runtime: the shaping set-up its parties start with, and its teardown.

``userspace`` and ``model`` need nothing beyond the plan; ``kernel`` builds the namespaces, veth pairs and
qdiscs first (:mod:`hebench.net.shaping.kernel`) and removes them when the configuration ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hebench.config import Configuration, Suite, configuration_name
from hebench.links.plan import NetworkPlan, plan_network
from hebench.net.shaping.scope import ShapingSetup
from hebench.runtime.local.party_names import server_parties

FLOWER_RATES_ONLY = (
    "netem: this kernel has no sch_netem, so Flower's traffic (its SuperLink APIs, the nodes' hub channels) gets "
    "rates only (tbf); the links' delay, jitter and loss are not applied"
)


@dataclass
class ConfigurationNetwork:
    """The shaping set-up handed to every party (None: loopback, unshaped) and how to take it down."""

    setup: ShapingSetup | None = None
    close: Callable[[], None] = lambda: None
    register: Callable[[int], None] = lambda pid: None  # a party process started on these links (kernel: swept)


def network_plan(suite: Suite, config: Configuration, clients: int) -> NetworkPlan | None:
    spec = suite.network_for(config)
    return None if spec is None else plan_network(spec, clients, suite.seed)


def prepare(suite: Suite, config: Configuration, clients: int, run_id: str) -> ConfigurationNetwork:
    """Build the configuration's links (namespaces first, for the kernel backend)."""
    plan = network_plan(suite, config, clients)
    if plan is None:
        return ConfigurationNetwork()
    if plan.emulation == "userspace":
        return ConfigurationNetwork(ShapingSetup(plan, pace=True, delays=True))
    if plan.emulation == "model":
        return ConfigurationNetwork(ShapingSetup(plan, pace=False, delays=False))
    from hebench.net.shaping.kernel import KernelNetwork

    kernel = KernelNetwork.build(plan, run_id, server_parties(config))
    return ConfigurationNetwork(kernel.setup(), kernel.close, kernel.register)


def check_networks(suite: Suite, runtime: str) -> None:
    """Refuse, before any work, links this run cannot apply: one line naming the field and the fix."""
    from hebench.errors import ParameterError

    for i, config in enumerate(suite.configurations):
        spec = suite.network_for(config)
        if spec is None:
            continue
        where = "network"
        if config.network is not None:
            where = f"{configuration_name(i, config.label)}, configurations.{i}.network"
        if runtime == "flower-sim":
            raise ParameterError(
                f"{where}: --engine flower-sim runs every client in one Ray process, which cannot be placed in "
                "per-party network namespaces, so its links cannot be applied",
                "use --engine flower with emulation: kernel, or run without --engine",
            )
        if runtime == "flower" and spec.emulation != "kernel":
            raise ParameterError(
                f"{where}.emulation: {spec.emulation} links are applied inside hebench's own channels, "
                "not to Flower's gRPC, so --engine flower cannot apply them",
                "set emulation: kernel (root; each Flower process in its party's namespace), or run without --engine",
            )
        if runtime not in ("hebench", "flower"):
            raise ParameterError(
                f"{where}.emulation: {spec.emulation} links are applied by the local runtime, "
                f"not by --engine {runtime}",
                "run without --engine, or leave network out of the suite for this engine",
            )
        if spec.emulation != "model" and config.spec.needs_engines and suite.offload.engines:
            raise ParameterError(
                f"{where}: remote offload engines (offload.engines) sit on a real network that hebench cannot shape",
                "use local engines (leave offload.engines empty), or emulation: model",
            )
        if spec.emulation == "kernel":
            from hebench.net.shaping.kernel import check_kernel_backend

            check_kernel_backend(f"{where}.emulation")


def network_record(suite: Suite, config: Configuration, clients: int, runtime: str = "hebench") -> dict | None:
    """The configuration record's ``network``: the plan, and how its links are applied on this machine (on
    ``runtime``: Flower's gRPC gets no userspace delays)."""
    plan = network_plan(suite, config, clients)
    if plan is None:
        return None
    applied: dict = {
        "userspace": {"userspace": ["rate", "delay", "jitter", "loss"]},
        "model": {"modelled": ["rate", "delay", "loss"], "note": "run on loopback; transfer times modelled"},
    }.get(plan.emulation, {})
    if plan.emulation == "kernel":
        from hebench.net.shaping.kernel import kernel_capabilities

        caps = kernel_capabilities()
        applied = caps.applied()
        if runtime == "flower" and not caps.netem:
            applied = {"kernel": applied["kernel"], "missing": [FLOWER_RATES_ONLY]}
    return {**plan.to_json(), "applied": applied}
