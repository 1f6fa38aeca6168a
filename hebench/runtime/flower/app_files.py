"""The Flower App hebench submits: a pyproject naming hebench's ServerApp and ClientApp.

The App carries no code and no dependencies: hebench[flower] is installed
beside every SuperLink and SuperNode, and runtime dependency installation is
off (no network is needed at run time).
"""

from __future__ import annotations

from pathlib import Path

import tomli_w

from hebench.runtime.flower.plan import PLAN_KEY, SERVER_KEY, FlowerPlan

PYPROJECT = f"""[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "hebench-flower"
version = "0.1.0"
description = "hebench on Flower: FedAvg over encrypted updates (written by hebench run --engine flower)"
license = "Apache-2.0"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "hebench"

[tool.flwr.app.components]
serverapp = "hebench.runtime.flower.server_app:app"
clientapp = "hebench.runtime.flower.client_app:app"

[tool.flwr.app.config]
{PLAN_KEY} = ""
{SERVER_KEY} = ""
"""


def write_app(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(PYPROJECT)
    return folder


def write_run_config(path: Path, plan: FlowerPlan, server_key: bytes) -> Path:
    """The run's overrides: the plan and the server's hub credential (public keys and records only)."""
    path.write_text(tomli_w.dumps({PLAN_KEY: plan.to_json(), SERVER_KEY: server_key.hex()}))
    return path
