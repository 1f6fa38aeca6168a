"""Benchmarks of HE libraries: per-operation costs on this host."""
