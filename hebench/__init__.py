"""hebench: benchmark and evaluate homomorphic encryption for federated learning."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hebench")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
