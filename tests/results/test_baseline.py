"""Only the unprotected row is the baseline: secagg, secret sharing, DP, TLS and modelled TEE rows are protections."""

from __future__ import annotations

from tests.report.rows import row


def test_only_plain_unprotected_raw_is_the_baseline():
    assert row("raw", "raw", "plain").is_baseline
    protected = [
        row("secagg", "secagg", "plain"),
        row("secret-sharing", "secret-sharing", "plain"),
        row("raw/dp", "raw", "plain", dp={"level": "client", "noise_multiplier": 0.1}),
        row("raw/tls", "raw", "plain", transport="tls"),
        row("raw/tee-modelled", "raw", "plain", tee_modelled=True),
        row("host-he/tenseal-ckks", "host-he", "tenseal-ckks"),
    ]
    assert not any(r.is_baseline for r in protected)
