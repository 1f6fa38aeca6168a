"""Which adapters exist, which import here, and how to install the rest."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

from hebench.crypto.base import HEAdapter
from hebench.errors import AdapterUnavailableError, UnknownAdapterError


@dataclass(frozen=True)
class AdapterSpec:
    name: str
    scheme: str
    module: str  # hebench module holding the class
    cls: str
    library: str  # import name of the HE library
    distribution: str  # pip name
    install_hint: str
    python_versions: tuple[tuple[int, int], ...] = ()  # empty: any


_PYFHEL_HINT = "python tools/build_pyfhel.py --install   (builds the sdist offline; see README)"
_OPENFHE_HINT = "pip install 'hebench[openfhe]' on CPython 3.10 or 3.12"
_OPENFHE_PY = ((3, 10), (3, 12))
_SEAL_HINT = "pip install tenseal zstandard"

SPECS: tuple[AdapterSpec, ...] = (
    AdapterSpec("plain", "none", "hebench.crypto.plain", "PlainAdapter", "numpy", "numpy", "pip install numpy"),
    AdapterSpec(
        "paillier", "paillier", "hebench.crypto.paillier", "PaillierAdapter", "phe", "phe", "pip install phe gmpy2"
    ),
    AdapterSpec(
        "tenseal-ckks",
        "ckks",
        "hebench.crypto.tenseal_adapter",
        "TenSEALCKKS",
        "tenseal",
        "tenseal",
        "pip install tenseal",
    ),
    AdapterSpec(
        "tenseal-bfv",
        "bfv",
        "hebench.crypto.tenseal_adapter",
        "TenSEALBFV",
        "tenseal",
        "tenseal",
        "pip install tenseal",
    ),
    AdapterSpec("seal-bfv", "bfv", "hebench.crypto.seal_bfv", "SealBFV", "tenseal", "tenseal", _SEAL_HINT),
    AdapterSpec("seal-ckks", "ckks", "hebench.crypto.seal_ckks", "SealCKKS", "tenseal", "tenseal", _SEAL_HINT),
    AdapterSpec("pyfhel-ckks", "ckks", "hebench.crypto.pyfhel_adapter", "PyfhelCKKS", "Pyfhel", "Pyfhel", _PYFHEL_HINT),
    AdapterSpec("pyfhel-bfv", "bfv", "hebench.crypto.pyfhel_adapter", "PyfhelBFV", "Pyfhel", "Pyfhel", _PYFHEL_HINT),
    AdapterSpec(
        "openfhe-ckks",
        "ckks",
        "hebench.crypto.openfhe_adapter",
        "OpenFHECKKS",
        "openfhe",
        "openfhe",
        _OPENFHE_HINT,
        _OPENFHE_PY,
    ),
    AdapterSpec(
        "openfhe-bfv",
        "bfv",
        "hebench.crypto.openfhe_adapter",
        "OpenFHEBFV",
        "openfhe",
        "openfhe",
        _OPENFHE_HINT,
        _OPENFHE_PY,
    ),
)


@dataclass(frozen=True)
class AdapterStatus:
    name: str
    scheme: str
    library: str
    version: str | None
    available: bool
    reason: str  # why unavailable ("" when available)
    install_hint: str


def _spec(name: str) -> AdapterSpec:
    for spec in SPECS:
        if spec.name == name:
            return spec
    raise UnknownAdapterError(f"unknown adapter '{name}'", f"choose one of: {', '.join(adapter_names())}")


def adapter_names() -> list[str]:
    return [s.name for s in SPECS]


@cache
def _probe(library: str, versions: tuple[tuple[int, int], ...]) -> tuple[str | None, str]:
    """(version, reason): reason is empty when the library imports."""
    from importlib.metadata import PackageNotFoundError, version

    here = sys.version_info[:2]
    if versions and here not in versions:
        wanted = " and ".join(f"CPython {a}.{b}" for a, b in versions)
        return None, f"{library} publishes extensions for {wanted} only; this is CPython {here[0]}.{here[1]}"
    try:
        importlib.import_module(library)
    except Exception as err:  # ImportError, or OSError from a broken extension
        return None, f"cannot import {library}: {err}"
    try:
        return version(library), ""
    except PackageNotFoundError:
        return getattr(sys.modules[library], "__version__", "unknown"), ""


def status(name: str) -> AdapterStatus:
    spec = _spec(name)
    ver, reason = _probe(spec.library, spec.python_versions)
    return AdapterStatus(spec.name, spec.scheme, spec.distribution, ver, not reason, reason, spec.install_hint)


def list_adapters() -> list[AdapterStatus]:
    return [status(s.name) for s in SPECS]


def adapter_class(name: str) -> type[HEAdapter]:
    spec = _spec(name)
    st = status(name)
    if not st.available:
        raise AdapterUnavailableError(f"adapter '{name}' is unavailable: {st.reason}", f"install it: {st.install_hint}")
    return getattr(importlib.import_module(spec.module), spec.cls)


def create_adapter(name: str, params: dict[str, Any] | None = None) -> HEAdapter:
    """A new adapter with explicit parameters (no keys yet)."""
    return adapter_class(name)(params)


def check_params(name: str, params: dict[str, Any] | None) -> None:
    """Run an adapter's parameter and security checks without making keys (suite validation).

    Raises the adapter's :class:`~hebench.errors.ParameterError`; an adapter whose library is missing here is
    not checked (the run reports it when it needs the adapter).
    """
    try:
        cls = adapter_class(name)
    except AdapterUnavailableError:
        return
    cls(params)


def load_adapter(blob: bytes) -> HEAdapter:
    """Rebuild an adapter from a key set made by :meth:`HEAdapter.export_keys`."""
    from hebench.crypto import wire
    from hebench.crypto.base import KEYS_MAGIC

    header, _ = wire.unpack(KEYS_MAGIC, blob, "key set")
    wire.require(header, {"adapter": str, "params": dict}, "key set")
    adapter = create_adapter(header["adapter"], header["params"])
    adapter.load_keys(blob)
    return adapter
