"""Read a suite file: YAML, ``--set`` overrides, validation into a :class:`Suite`; every problem becomes one
:class:`SuiteError` naming the file, the field (configurations counted from 1, as users count) and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hebench.config.overrides import apply_overrides
from hebench.config.problems import describe
from hebench.config.suite import Suite
from hebench.errors import SuiteError


def parse_suite(raw: Any, source: str = "<suite>", overrides: list[str] | None = None) -> Suite:
    """Validate a suite's YAML (a mapping), with ``--set`` ``overrides`` applied first."""
    if not isinstance(raw, dict):
        raise SuiteError(
            f"{source}: a suite must be a YAML mapping, got {type(raw).__name__}", "see suites/quickstart.yaml"
        )
    raw = apply_overrides(raw, overrides or [], source)
    try:
        return Suite.model_validate(raw)
    except ValidationError as err:
        problem, fix = describe(err, Suite)
        raise SuiteError(f"{source}: {problem}", fix) from None


def load_suite(path: str | Path, overrides: list[str] | None = None) -> Suite:
    """Read and validate the suite file at ``path``."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"suite file {path} does not exist", "pass a path such as suites/quickstart.yaml") from None
    except IsADirectoryError:
        raise SuiteError(
            f"{path} is a folder, not a suite file", f"pass a YAML file inside it, e.g. {path}/NAME.yaml"
        ) from None
    except UnicodeDecodeError as err:
        raise SuiteError(
            f"{path} is not a text file (byte {err.start} is not UTF-8)", "pass a suite YAML file"
        ) from None
    except OSError as err:
        raise SuiteError(
            f"cannot read suite file {path}: {err.strerror or err}", "check the path and its permissions"
        ) from None
    except yaml.YAMLError as err:
        raise SuiteError(f"{path} is not valid YAML: {err}", "fix the YAML syntax at the position shown") from None
    except RecursionError:
        raise SuiteError(f"{path} nests too deeply to be a suite", "pass a suite YAML file") from None
    return parse_suite(raw, str(path), overrides)
