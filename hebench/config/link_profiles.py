"""Named link profiles: an access link's rates, one-way delay, jitter and loss, each with its public source.

Rates are megabits per second (10^6 bit/s), delays one-way milliseconds (half the source's round-trip time).
The figures are copied from the sources named here (and in docs/networks.md); where a figure is an assumption
rather than a measurement, its note says so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """One named link: what it stands for, its figures, and where they come from."""

    name: str
    uplink_mbit: float
    downlink_mbit: float
    delay_ms: float  # one way
    jitter_ms: float
    loss: float
    stands_for: str
    source: str


_LIGHTHOUSE = "GoogleChrome/lighthouse core/config/constants.js (throttling.mobileSlow4G)"
_WPT = "WebPageTest www/settings/connectivity.ini.sample"

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "lte",
            uplink_mbit=0.75,
            downlink_mbit=1.6384,
            delay_ms=75.0,
            jitter_ms=0.0,
            loss=0.0,
            stands_for="a phone on a slow 4G/LTE cell (Lighthouse: roughly the 75th percentile of 4G connections)",
            source=f"{_LIGHTHOUSE}: 1.6 × 1024 kbit/s down, 750 kbit/s up, 150 ms RTT",
        ),
        Profile(
            "3g",
            uplink_mbit=0.768,
            downlink_mbit=1.6,
            delay_ms=150.0,
            jitter_ms=0.0,
            loss=0.0,
            stands_for="a phone on 3G",
            source=f"{_WPT} [3G]: 1.6 Mbps / 768 Kbps, 300 ms RTT",
        ),
        Profile(
            "dsl",
            uplink_mbit=0.384,
            downlink_mbit=1.5,
            delay_ms=25.0,
            jitter_ms=0.0,
            loss=0.0,
            stands_for="an ADSL line",
            source=f"{_WPT} [DSL]: 1.5 Mbps / 384 Kbps, 50 ms RTT",
        ),
        Profile(
            "cable",
            uplink_mbit=1.0,
            downlink_mbit=5.0,
            delay_ms=14.0,
            jitter_ms=0.0,
            loss=0.0,
            stands_for="a cable modem",
            source=f"{_WPT} [Cable]: 5 Mbps / 1 Mbps, 28 ms RTT",
        ),
        Profile(
            "home-broadband",
            uplink_mbit=5.0,
            downlink_mbit=20.0,
            delay_ms=2.0,
            jitter_ms=0.0,
            loss=0.0,
            stands_for="home fibre (FIOS)",
            source=f"{_WPT} [FIOS]: 20 Mbps / 5 Mbps, 4 ms RTT",
        ),
        Profile(
            "datacenter",
            uplink_mbit=10_000.0,
            downlink_mbit=10_000.0,
            delay_ms=0.05,
            jitter_ms=0.0,
            loss=0.0,
            stands_for="a 10 Gbit/s Ethernet port in one data centre",
            source="IEEE 802.3ae (10 Gbit/s Ethernet) for the rate; the 0.1 ms RTT is an assumption, not a measurement",
        ),
    )
}


def profile_names() -> tuple[str, ...]:
    return tuple(PROFILES)


def get_profile(name: str) -> Profile:
    """The profile ``name``; ValueError naming the known ones otherwise (suite validation turns it into a field)."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile '{name}'; choose one of {', '.join(PROFILES)}") from None
