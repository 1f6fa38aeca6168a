"""``python -m hebench`` is the ``hebench`` command."""

from hebench.cli.main import run

run()
