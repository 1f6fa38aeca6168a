"""Clients that drop out or lag: the suite's ``faults:`` block and the draw of each client's fault per round."""

from hebench.config.faults import FaultsSpec, StragglerSpec
from hebench.faults.draw import NO_FAULT, Fault, fault_for, faults_of_round

__all__ = ["NO_FAULT", "Fault", "FaultsSpec", "StragglerSpec", "fault_for", "faults_of_round"]
