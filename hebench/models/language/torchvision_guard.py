"""Keep a torchvision that cannot be imported from breaking ``import transformers`` and ``import peft``.

PyPI's torchvision wheels are built against CUDA torch; beside the CPU build of torch that hebench
installs, ``import torchvision`` fails (``operator torchvision::nms does not exist``). transformers
decides whether torchvision is available with ``importlib.util.find_spec("torchvision")`` (its
``is_torchvision_available``, cached), which only asks whether the package is installed, and then
imports it on the way to GPT-2: the import error surfaces as "Could not import module
'GPT2LMHeadModel'". ``find_spec`` answers None for a name whose ``sys.modules`` entry is None, and
``import`` then raises ImportError, which every optional-dependency check treats as "not installed".
So when torchvision is installed but fails to import, its entry is set to None before transformers
is imported: transformers and peft see no torchvision, and nothing is uninstalled. A torchvision that
imports is left alone.
"""

from __future__ import annotations

import importlib.util
import sys


def hide_broken_torchvision() -> str | None:
    """Mark torchvision absent in this process if it is installed but cannot be imported; the import error, or
    None when there was nothing to hide (no torchvision, or a working one)."""
    if "torchvision" in sys.modules:
        return None  # imported already (working), or hidden already
    if importlib.util.find_spec("torchvision") is None:
        return None
    try:
        import torchvision  # noqa: F401
    except Exception as err:  # a CUDA build beside CPU torch raises RuntimeError, others ImportError or OSError
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        sys.modules["torchvision"] = None  # type: ignore[assignment]
        return f"{type(err).__name__}: {err}"
    return None
