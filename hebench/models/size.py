"""Whether a model fits this machine: its parameters counted on torch's meta device (nothing allocated), refused
before a real build would end in an out-of-memory error."""

from __future__ import annotations

import psutil

from hebench.errors import ParameterError

BYTES_PER_PARAMETER = 8  # a training party holds at least the float32 weights and their float32 gradients


def machine_memory() -> int:
    """This machine's physical memory in bytes."""
    return int(psutil.virtual_memory().total)


def check_fits(name: str, hidden: int, parameters: int, memory: int | None = None) -> None:
    """Refuse a model whose weights and gradients alone (:data:`BYTES_PER_PARAMETER` per parameter) exceed
    ``memory`` (default: this machine's): no party could train it."""
    memory = machine_memory() if memory is None else memory
    need = parameters * BYTES_PER_PARAMETER
    if need > memory:
        size = f" with hidden={hidden}" if name == "mlp" else ""
        raise ParameterError(
            f"model {name}{size} has {parameters:,} parameters: its weights and gradients alone take "
            f"{need / 2**30:,.1f} GiB, and this machine has {memory / 2**30:,.1f} GiB of memory",
            "choose a smaller model (e.g. --set model.hidden=16 for mlp), or run on a machine with more memory",
        )
