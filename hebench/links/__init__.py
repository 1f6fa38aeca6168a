"""Network links of a suite: named profiles, the per-party plan, and the transfer-time model (no I/O here).

The machinery that applies a link to traffic (pacing, namespaces) is :mod:`hebench.net.shaping`.
"""
