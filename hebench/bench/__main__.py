"""``python -m hebench.bench [NAME ...]``: see :mod:`hebench.bench.command`."""

from hebench.bench.command import main

if __name__ == "__main__":
    main()
