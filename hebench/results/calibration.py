"""A device's calibration file (``compare libraries --calibration-out``), read for projected engine times."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hebench.results.run_folder import RunFolder


@dataclass(frozen=True)
class CalibrationRead:
    """The calibration, or None with a note saying why projections are missing."""

    data: Mapping[str, Any] | None
    note: str | None = None


def read_calibration(name: str | None, folder: RunFolder) -> CalibrationRead:
    """The file a suite's ``offload.calibration`` names: as given, else inside the run folder."""
    if not name:
        return CalibrationRead(None)
    path = folder.resolve(name)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return CalibrationRead(
            None,
            f"calibration file {name} not found (neither as given nor in {folder.root}): "
            "engine times on the target device are not projected",
        )
    except (OSError, ValueError) as err:
        return CalibrationRead(None, f"calibration file {path} could not be read ({err}): no projected engine times")
    if not isinstance(data, dict) or not isinstance(data.get("adapters"), dict):
        return CalibrationRead(
            None, f"{path} is not a `compare libraries --calibration-out` file: no projected engine times"
        )
    return CalibrationRead(data)
