"""Measurement: timing statistics, CPU time, cycles where perf_event gives them, environment."""
