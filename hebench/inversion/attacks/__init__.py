"""Gradient-inversion attacks, one module each, behind one signature:
``reconstruct(observations, cfg, seeds) -> list[Reconstruction]`` (:mod:`.registry`).

- :mod:`.dlg`: DLG and iDLG (L-BFGS, squared distance; iDLG infers the label);
- :mod:`.inverting_gradients`: Inverting Gradients (cosine + TV, signed Adam);
- :mod:`.imprint`: a malicious server's trap weights read out (:mod:`.trap_weights`).

Every attack keeps its best iterate by its own loss and never looks at the private image.
"""

from hebench.inversion.attacks import dlg, imprint, inverting_gradients  # noqa: F401  (each registers itself)
from hebench.inversion.attacks.config import AttackConfig
from hebench.inversion.attacks.reconstruction import Reconstruction
from hebench.inversion.attacks.registry import ATTACKS, reconstruct, reconstruct_one

__all__ = ["ATTACKS", "AttackConfig", "Reconstruction", "reconstruct", "reconstruct_one"]
