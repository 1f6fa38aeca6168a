"""How long a client's upload would take on its access link, counted against ``training.round_deadline_s``.

With the network's tiers a client can be late because of its link as well as its compute. The client works
this out before it sends anything, from its link's figures and the upload's size, so a late client's
update never enters the running sum (a stream half summed cannot be taken out again): the uplink carries
the upload's bytes with their TCP segments' headers (:func:`hebench.links.segments.wire_bytes`, what the
shaper and ``tbf`` count) at the uplink's rate, after its one-way delay. Jitter, loss and other parties'
traffic on the aggregator's downlink are left out: the figure is the link's own, deterministic time.
"""

from __future__ import annotations

from hebench.links.plan import Link
from hebench.links.segments import wire_bytes


def upload_link_s(link: Link, payload_bytes: int) -> float:
    """Seconds ``payload_bytes`` of upload take on ``link``: its one-way delay plus wire bytes / uplink rate."""
    carried = 0.0 if link.up_Bps is None else wire_bytes(payload_bytes) / link.up_Bps
    return link.delay_s + carried
