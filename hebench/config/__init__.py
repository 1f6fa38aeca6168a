"""Suite files: the schema, one module per block, validated into frozen objects.

``base`` (what every block shares), ``data``, ``model``, ``training``, ``network`` (with ``link_profiles``),
``faults``, ``protection_options`` (a configuration's ``selective:``, ``dp:``, ``tee:``), ``configurations``
(a configuration, the ``offload:`` block), ``privacy`` (the ``privacy:`` block: attacks and threats),
``runtime`` (``runtime:`` and ``measure:``), ``steady`` (warm-up rounds), ``suite`` (the whole suite and the
checks across blocks), ``overrides`` (``--set``), ``problems`` (validation errors in users' words) and ``load``
(read a suite file). Callers import from here: ``from hebench.config import Suite, parse_suite, DPSpec``.

Config sits low: it imports only :mod:`hebench.errors`, the protections' spec-level modules and
:mod:`hebench.crypto.registry` (``tests/architecture/test_layers.py`` holds it to that).
"""

from hebench.config.base import FieldProblem, Frozen, configuration_name
from hebench.config.configurations import Configuration, OffloadSpec, params_tag
from hebench.config.data import DATASETS, DataSpec
from hebench.config.faults import FaultsSpec, StragglerSpec
from hebench.config.load import load_suite, parse_suite
from hebench.config.model import MODELS, ModelSpec
from hebench.config.network import LinkSpec, NetworkSpec, TierSpec
from hebench.config.overrides import apply_overrides
from hebench.config.privacy import PrivacySpec, ThreatSpec
from hebench.config.protection_options import DPSpec, SelectiveSpec, TEESpec
from hebench.config.runtime import AUTO_POOL_ABOVE, MeasureSpec, RuntimeSpec
from hebench.config.suite import Suite
from hebench.config.training import TrainingSpec

__all__ = [
    "AUTO_POOL_ABOVE",
    "DATASETS",
    "MODELS",
    "Configuration",
    "DPSpec",
    "DataSpec",
    "FaultsSpec",
    "FieldProblem",
    "Frozen",
    "LinkSpec",
    "MeasureSpec",
    "ModelSpec",
    "NetworkSpec",
    "OffloadSpec",
    "PrivacySpec",
    "RuntimeSpec",
    "SelectiveSpec",
    "StragglerSpec",
    "Suite",
    "TEESpec",
    "ThreatSpec",
    "TierSpec",
    "TrainingSpec",
    "apply_overrides",
    "configuration_name",
    "load_suite",
    "params_tag",
    "parse_suite",
]
