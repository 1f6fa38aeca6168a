"""The report and the results layer stay light: no torch, no HE library, no offload engine."""

from __future__ import annotations

import subprocess
import sys


def test_importing_results_and_report_loads_no_torch():
    code = (
        "import sys, hebench.results, hebench.report.build, hebench.report.load;"
        "heavy = [m for m in ('torch', 'tenseal', 'hebench.protections.offload.engine', 'hebench.fl.runner')"
        " if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
