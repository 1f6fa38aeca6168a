"""One row of a suite: a ``configurations:`` item (mode, adapter, parameters and what it adds), and the
``offload:`` block that places offload engines."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from hebench.config.base import FieldProblem, Frozen
from hebench.config.faults import FaultsSpec
from hebench.config.network import NetworkSpec
from hebench.config.protection_options import DPSpec, SelectiveSpec, TEESpec
from hebench.errors import HebenchError
from hebench.protections import ModeSpec, get_mode, mode_names
from hebench.protections.params import ModeParams


class Configuration(Frozen):
    name: str | None = None
    mode: str = "raw"  # a registered mode: see hebench.protections
    adapter: str = "plain"
    params: dict[str, Any] = Field(default_factory=dict)
    packing: Literal["flat", "per-layer"] = "flat"
    selective: SelectiveSpec | None = None
    dp: DPSpec | None = None  # differential privacy on the clients' updates
    transport: Literal["tcp", "tls"] = "tcp"  # tls: every party's channels over mutual TLS
    tee: TEESpec | None = None  # a modelled (never measured) TEE cost row from this configuration's run
    network: NetworkSpec | None = None  # keys given here override the suite's network (None: the suite's)
    faults: FaultsSpec | None = None  # keys given here override the suite's faults (None: the suite's)

    @field_validator("params")
    @classmethod
    def _adapter_accepts(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Build the adapter's parameters now (no keys): a bad or insecure set fails the suite, not the run."""
        from hebench.crypto.registry import adapter_names, check_params

        adapter, mode = info.data.get("adapter"), info.data.get("mode")
        if mode in mode_names() and get_mode(mode).params_model is not None:
            try:  # the mode's own parameters; its adapter (plain) takes none
                get_mode(mode).parse_params(params)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"mode {mode}: {where + ': ' if where else ''}{first['msg']}") from None
            return params
        if adapter in adapter_names():
            try:
                check_params(adapter, params)
            except HebenchError as err:
                raise ValueError(f"{err.problem}" + (f" (fix: {err.fix})" if err.fix else "")) from None
        return params

    @model_validator(mode="after")
    def _consistent(self) -> Configuration:
        from hebench.crypto.registry import adapter_names

        if self.adapter not in adapter_names():
            raise FieldProblem(
                "adapter", f"unknown adapter '{self.adapter}'; choose one of {', '.join(adapter_names())}"
            )
        if self.mode not in mode_names():
            raise FieldProblem("mode", f"unknown mode '{self.mode}'; choose one of {', '.join(mode_names())}")
        self.spec.check(self.adapter, self.packing, self.selective is not None)
        if self.selective is not None and self.packing != "flat":
            raise ValueError("selective encryption packs the encrypted coordinates flat: use packing: flat")
        return self

    @property
    def spec(self) -> ModeSpec:
        """This configuration's mode."""
        return get_mode(self.mode)

    @property
    def adapter_params(self) -> dict[str, Any]:
        """The adapter's parameters (none when ``params`` belong to the mode)."""
        return {} if self.spec.params_model is not None else self.params

    @property
    def mode_params(self) -> ModeParams | None:
        """The mode's own parameters, parsed (None: ``params`` are the adapter's)."""
        return self.spec.parse_params(self.params)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        base = self.mode if self.spec.plain_adapter else f"{self.mode}/{self.adapter}"
        if self.selective is not None:
            sel = self.selective
            base += f"/sel-layers-{'+'.join(sel.layers)}" if sel.mask == "layers" else f"/sel-{sel.mask}-{sel.ratio:g}"
        base += "/per-layer" if self.packing == "per-layer" else ""
        base += f"/{self.dp.tag}" if self.dp is not None else ""
        base += "/tls" if self.transport == "tls" else ""
        base += "/tee-modelled" if self.tee is not None else ""
        base += f"[{params_tag(self.params)}]" if self.params else ""
        own_links = self.network is not None and (self.network.clients is not None or self.network.tiers is not None)
        return base + (f"@{self.network.label}" if own_links and self.network is not None else "")


def params_tag(params: dict[str, Any]) -> str:
    """Parameters in a label: ``key=value`` sorted by key, lists joined by ``+`` (``coeff_mod_bits=60+40+60``)."""

    def value(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return "+".join(value(x) for x in v)
        return f"{v:g}" if isinstance(v, float) else str(v)

    return ",".join(f"{k}={value(params[k])}" for k in sorted(params))


class OffloadSpec(Frozen):
    """Where offload engines run. Default: one local engine process per client, on its own cores."""

    engines: tuple[str, ...] = ()  # remote engines "host:port", one per client (started with `hebench engine serve`)
    tls: bool = False  # local engines: mutual TLS with certificates generated into the run folder
    tls_dir: str | None = None  # a `hebench engine certs` folder (required for remote engines)
    engine_cores: tuple[int, ...] | None = None  # default: the last available core
    host_cores: tuple[int, ...] | None = None  # default: the other cores
    chunk_values: int = Field(65536, ge=1)  # values per streamed chunk (host -> engine -> aggregator)
    calibration: str | None = None  # `compare libraries --calibration-out` file from the target device
