"""The modes a configuration can run in, as one registry of frozen specs (see :mod:`hebench.protections.spec`).

Each protection is a package here (``raw``, ``host_he``, ``offload``, ``secagg``, ``sharing``, ``decryptor_he``)
holding its spec module; ``dp``, ``selective`` and ``tls`` are modifiers that combine with modes.
"""

from hebench.protections.registry import find_mode, get_mode, mode_names, register_mode
from hebench.protections.spec import AttackerView, KeyHolders, ModeSpec

__all__ = ["AttackerView", "KeyHolders", "ModeSpec", "find_mode", "get_mode", "mode_names", "register_mode"]
