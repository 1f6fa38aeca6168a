"""Run one :class:`OperationPlan` in a fresh process: ``python -m hebench.heops.worker``.

Reads the plan as JSON on stdin, writes ``{"ok": record}`` or
``{"error": {...}}`` as the last line of stdout. A fresh process per adapter
gives a clean peak-RSS figure and thread settings fixed before any library loads.
"""

from __future__ import annotations

import json
import sys
import traceback

from hebench.errors import HebenchError


def main() -> None:
    from hebench.heops.operations import OperationPlan, run_plan

    plan = OperationPlan(**json.loads(sys.stdin.read()))
    try:
        out: dict = {"ok": run_plan(plan)}
    except HebenchError as err:
        out = {"error": {"type": type(err).__name__, "problem": err.problem, "fix": err.fix}}
    except Exception as err:  # reported to the parent as a typed error
        out = {
            "error": {
                "type": "HebenchError",
                "problem": f"{type(err).__name__}: {err}",
                "fix": "",
                "trace": traceback.format_exc(),
            }
        }
    sys.stdout.write("\n" + json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
