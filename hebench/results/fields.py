"""Typed building blocks of records: a base with JSON conversion and field checks, and per-phase measurements.

Every record and nested measurement is a frozen dataclass. ``from_json`` checks
each field against its annotation and raises :class:`RecordError` naming the
kind and field. Keys a class does not know are kept in ``extra`` when reading
(a file from a newer or branch build still loads, and nothing is lost), and
rejected when ``strict`` (the writer: a misspelled field is a bug, caught where
it is written).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from hebench.errors import RecordError

if TYPE_CHECKING:
    from typing import Self  # Python 3.11+: an annotation only, so hebench still imports on 3.10


def _plain(value: Any) -> Any:
    """A JSON-ready copy: nested structs, tuples and numpy values converted."""
    if isinstance(value, Struct):
        return value.to_json()
    if isinstance(value, Phases):
        return value.to_json()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    return value


INT_BOUND = 2**63  # counts, rounds and bytes fit a signed 64-bit integer; a larger one is not hebench's


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked (and converted, for nested types and tuples) against the annotation ``hint``."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, where)
            except RecordError as err:
                errors.append(err)
        raise errors[0] if errors else RecordError(f"{where} is None", "give it a value")
    if isinstance(hint, type) and issubclass(hint, (Struct, Phases)):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise RecordError(f"{where} should be an object, got {type(value).__name__}", "write a JSON object")
        return hint.from_json(value, where=where)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise RecordError(f"{where} should be a list, got {type(value).__name__}", "write a JSON list")
        (item,) = typing.get_args(hint)[:1]
        return tuple(_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise RecordError(f"{where} should be an object, got {type(value).__name__}", "write a JSON object")
        return dict(value)
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        value = int(value) if ok else value
        if ok and not -INT_BOUND < value < INT_BOUND:
            raise RecordError(f"{where} is out of range ({len(str(abs(value)))} digits)", "fix the file that wrote it")
    elif hint is float:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        try:
            value = float(value) if ok else value
        except OverflowError:  # an integer beyond any float
            raise RecordError(f"{where} is out of range (beyond any float)", "fix the file that wrote it") from None
    elif hint is str:
        ok = isinstance(value, str)
    else:
        ok = True  # annotations this checker does not know are taken as they are
    if not ok:
        raise RecordError(
            f"{where} should be {getattr(hint, '__name__', hint)}, got {type(value).__name__} {value!r:.40}",
            "fix the code or file that wrote it",
        )
    return value


@dataclass(frozen=True, kw_only=True)
class Struct:
    """A typed JSON object; keys it does not know are kept in ``extra``."""

    extra: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _name: ClassVar[str] = "object"

    @classmethod
    def from_json(cls, data: Mapping[str, Any], strict: bool = False, where: str | None = None) -> Self:
        where = where or cls._name
        hints, known = _schema(cls)
        unknown = {k: v for k, v in data.items() if k not in known and k not in _ENVELOPE}
        if unknown and strict:
            raise RecordError(
                f"{where} has no field {', '.join(repr(k) for k in sorted(unknown))}",
                f"use one of: {', '.join(sorted(known))}",
            )
        values: dict[str, Any] = {}
        for name, f in known.items():
            if name in data:
                values[name] = _coerce(data[name], hints[name], f"{where}.{name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RecordError(f"{where} lacks the field '{name}'", "fix the code or file that wrote it")
        return cls(**values, extra=dict(unknown))

    def to_json(self) -> dict[str, Any]:
        """Fields that are set (None is left out: it is every optional field's default), then ``extra``."""
        out = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**{k: v for k, v in out.items() if v is not None}, **_plain(self.extra)}


_ENVELOPE = frozenset({"schema", "kind"})


@functools.cache
def _schema(cls: type[Struct]) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A struct's field annotations and fields (but ``extra``), resolved once per class."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "extra" and f.init}
    return typing.get_type_hints(cls), fields


@dataclass(frozen=True, kw_only=True)
class Phase(Struct):
    """One phase's totals for a round: wall and CPU seconds; cycles where perf_event counted them."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    cycles: float | None = None

    _name: ClassVar[str] = "phase"


@dataclass(frozen=True)
class Phases:
    """Phases by name, in the order they were measured."""

    by_name: Mapping[str, Phase] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], strict: bool = False, where: str = "phases") -> Phases:
        return cls({str(k): _coerce(v, Phase, f"{where}.{k}") for k, v in data.items()})

    def to_json(self) -> dict[str, Any]:
        return {k: {"wall_s": p.wall_s, "cpu_s": p.cpu_s, "cycles": p.cycles} for k, p in self.by_name.items()}

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __getitem__(self, name: str) -> Phase:
        return self.by_name[name]

    def __len__(self) -> int:
        return len(self.by_name)

    def get(self, name: str) -> Phase | None:
        return self.by_name.get(name)

    def wall_s(self, name: str) -> float | None:
        phase = self.by_name.get(name)
        return None if phase is None else phase.wall_s

    def cpu_s(self, exclude: tuple[str, ...] = ()) -> float:
        """CPU seconds of every phase but ``exclude`` (e.g. waiting, which is idle time)."""
        return sum(p.cpu_s for k, p in self.by_name.items() if k not in exclude)


@dataclass(frozen=True, kw_only=True)
class Measured(Struct):
    """What a party's meter took: per-phase figures, peak RSS, where cycles came from."""

    phases: Phases = field(default_factory=Phases)
    peak_rss_bytes: int | None = None
    cycles_source: str | None = None  # "perf_event", or None: cycles not counted
    cpu_accounting: str | None = None  # "process" (a party's own process) or "thread" (a pooled client's thread)
    peak_rss_scope: str | None = None  # "process", or "worker": pooled clients share their worker's memory
    worker: str | None = None  # the pool worker hosting a pooled client
    network: Mapping[str, Any] | None = None  # shaped runs: what crossed the party's link, and how long it held it


@dataclass(frozen=True, kw_only=True)
class EngineReport(Measured):
    """An offload engine's work for one client and round, as it reported it."""

    cores: tuple[int, ...] | None = None
    host_bytes_sent: int | None = None
    host_bytes_received: int | None = None
    aggregator_bytes_sent: int | None = None
    aggregator_bytes_received: int | None = None

    _name: ClassVar[str] = "engine"
