"""The start-up benchmark times commands in fresh processes beside its references and states its goal."""

from __future__ import annotations

import pytest

from hebench.bench.startup import GOAL_S, REFERENCES, startup


@pytest.mark.slow  # the startup benchmark: fresh interpreters importing torch
def test_startup_reports_each_command_against_its_references_and_the_goal():
    result = startup(repeats=1, commands={"hebench --version": ["-m", "hebench", "--version"]})
    (row,) = result["rows"]
    assert row["command"] == "hebench --version" and row["goal_s"] == GOAL_S
    assert row["median_s"] > 0 and row["vs_import_torch"] > 0 and isinstance(row["meets_goal"], bool)
    assert set(result["references_s"]) == set(REFERENCES)
    assert result["meets_goal"] == row["meets_goal"]
