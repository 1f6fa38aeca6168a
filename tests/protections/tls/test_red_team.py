"""The observer under TLS, the cell every mode shares (``hebench/protections/tls/spec.py``, ``UNDER_TLS``): a network
observer tapping a victim's channels in a live round over ``transport: tls`` (to the aggregator, and to the key
authority where keys are pushed) sees whole TLS records only, no window of the update or of the secret key set, and
decodes nothing. The live rounds here are the direct-link modes' (raw, host-he); that every channel of every mode
(engines, share holders, the decryptor, secagg's rounds) is opened with the run's TLS decision is
``tests/net/test_every_channel_decides_tls.py``'s check, and share holders' traffic is tapped in
``tests/net/test_tls_doors.py``. Without TLS each mode's own observer test reads what its rule says."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.protections.raw.adversary import play
from hebench.protections.raw.live_round import HeldModel, run_round
from hebench.protections.red_team import Target
from hebench.protections.threats import Adversary
from hebench.protections.tls.adversary import decode_wires, observe, observer_view
from hebench.protections.tls.tap import TO_DIALLER, TO_LISTENER
from tests.conftest import INSTALLED
from tests.protections.red_team import Digits, sizes, vector, windows

MODES = [
    ("raw", "plain"),
    pytest.param(
        "host-he", "tenseal-ckks", marks=pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="no TenSEAL")
    ),
]


@pytest.mark.parametrize(("mode", "adapter"), MODES)
def test_red_team_tls_observer_reads_only_tls_records(mode, adapter):
    digits = Digits(3)
    net = digits.model()
    w = vector(net)
    config = {"mode": mode, "adapter": adapter, "transport": "tls"}

    def clients(ctx):
        return HeldModel(ctx.client_index, sizes(net), digits.trainer(net))

    live = run_round(config, 3, play(dict.fromkeys(range(3), w)), clients, tapped=(0,), colluders=(2,))
    assert live.served is not None and not live.refusals, (live.server_error, live.refusals)
    taps = live.taps[0]
    streams = {name: tap.finished() for name, tap in taps.items()}
    wire = decode_wires(taps)
    assert wire.tls_only and not wire.uploads and not wire.key_sets  # TLS records, and nothing decodes
    assert observe(wire).values is None
    seen = b"".join(s[way] for s in streams.values() for way in (TO_LISTENER, TO_DIALLER))
    sent = digits.trainer(net)(0, w)  # the victim's upload, in the clear
    assert len(streams["aggregator"][TO_LISTENER]) > sent.nbytes  # (it did cross this wire)
    assert not any(window in seen for window in windows(sent))
    if mode == "host-he":  # the key authority pushed the secret set through the tap: none of it shows
        assert "key-authority" in taps
        secret = live.served.liar.aggregation.key_set(2, live.served.liar.epoch).secret_key_bytes()
        assert not any(secret[i : i + 32] in seen for i in range(0, len(secret) - 32, len(secret) // 8))
    target = Target(mode, adapter, {}, "tls", Adversary.OBSERVER, None, 0, (w,) * 3, digits.trainer(net), sizes(net))
    got = observer_view(target)
    assert got.update is None and "TLS records" in got.notes[0]
    if mode == "raw":  # control: inside the session the aggregator still gets the plaintext update raw sends
        assert np.array_equal(live.served.liar.read(live.served.uploads[0]).values, sent)
