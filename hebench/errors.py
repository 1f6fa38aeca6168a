"""Typed errors. Each names the problem and how to fix it; the CLI prints both."""

from __future__ import annotations


class HebenchError(Exception):
    """Base class: ``str(err)`` is the problem, ``err.fix`` what to do about it."""

    exit_code = 2

    def __init__(self, problem: str, fix: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


class ParameterError(HebenchError):
    """Inconsistent or out-of-range parameters."""


class InsecureParametersError(ParameterError):
    """Parameters below the security level hebench accepts without ``allow_insecure``."""


class UnknownAdapterError(HebenchError):
    """No adapter has this name."""


class AdapterUnavailableError(HebenchError):
    """The adapter's library cannot be imported here."""

    exit_code = 3


class PrecisionError(HebenchError):
    """A value does not fit the fixed-point range the parameters allow."""


class CiphertextError(HebenchError):
    """Ciphertext bytes that are corrupted, truncated, or from another key or adapter."""


class SuiteError(HebenchError):
    """A suite file that does not validate."""


class DatasetError(HebenchError):
    """A dataset that is missing, corrupt, or cannot be split as asked."""


class PartyError(HebenchError):
    """A federated party (client, aggregator, key authority) failed or misbehaved."""

    exit_code = 4


class PeerClosedError(PartyError):
    """A party's peer closed the connection or died (the aggregator treats a lost client as a dropout)."""


class RecordError(HebenchError):
    """A result record that does not match its kind's fields (unknown kind, missing or mistyped field)."""


class ResultsWriteError(HebenchError):
    """Results could not be written (e.g. the disk is full); the records written before are intact."""

    exit_code = 5
