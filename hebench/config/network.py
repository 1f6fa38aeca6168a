"""The ``network:`` block: the links every party's traffic crosses (a suite's, and a configuration's over it)."""

from __future__ import annotations

from typing import Literal

from pydantic import ValidationInfo, field_validator, model_validator

from hebench.config.base import Frozen
from hebench.config.link_profiles import get_profile


class LinkSpec(Frozen):
    """An access link: rates in Mbit/s (10^6 bit/s), one-way delay and jitter in ms, loss as a fraction of
    packets. ``profile`` fills every figure from :mod:`hebench.config.link_profiles`; keys given beside it override
    them. A rate left out is not limited."""

    profile: str | None = None
    uplink_mbit: float | None = None
    downlink_mbit: float | None = None
    delay_ms: float | None = None
    jitter_ms: float | None = None
    loss: float | None = None

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None:
            get_profile(value)  # ValueError names the profiles there are
        return value

    @field_validator("uplink_mbit", "downlink_mbit")
    @classmethod
    def _positive_rate(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and not value > 0:
            raise ValueError(
                f"{info.field_name} must be a positive rate in Mbit/s, got {value}: write e.g. 10, "
                "or leave it out for a link without a rate limit"
            )
        return value

    @field_validator("delay_ms", "jitter_ms")
    @classmethod
    def _non_negative_time(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and value < 0:
            raise ValueError(f"{info.field_name} is a one-way time in ms and cannot be negative, got {value}")
        return value

    @field_validator("loss")
    @classmethod
    def _loss_fraction(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value < 1:
            raise ValueError(f"loss is a fraction of packets in [0, 1), got {value}: write e.g. 0.01 for 1 %")
        return value

    def figures(self) -> dict[str, float | None]:
        """The link's figures: the profile's, overridden by the keys given (None: not limited / none)."""
        base: dict[str, float | None] = dict.fromkeys(_LINK_FIGURES)
        if self.profile is not None:
            prof = get_profile(self.profile)
            base = {k: getattr(prof, k) for k in _LINK_FIGURES}
        return {k: getattr(self, k) if getattr(self, k) is not None else base[k] for k in _LINK_FIGURES}

    @property
    def label(self) -> str:
        """The profile's name when nothing overrides it, else the figures (``up 5/down 20 Mbit/s, 2 ms``)."""
        if self.profile is not None and all(getattr(self, k) is None for k in _LINK_FIGURES):
            return self.profile
        f = self.figures()
        if f["uplink_mbit"] is None and f["downlink_mbit"] is None and not f["delay_ms"] and not f["loss"]:
            return "unlimited"
        up = "∞" if f["uplink_mbit"] is None else f"{f['uplink_mbit']:g}"
        down = "∞" if f["downlink_mbit"] is None else f"{f['downlink_mbit']:g}"
        out = f"up {up}/down {down} Mbit/s"
        out += f", {f['delay_ms']:g} ms" if f["delay_ms"] else ""
        out += f", loss {f['loss']:g}" if f["loss"] else ""
        return out


_LINK_FIGURES = ("uplink_mbit", "downlink_mbit", "delay_ms", "jitter_ms", "loss")


class TierSpec(Frozen):
    """A share of the clients on their own link (``link``, or a named ``profile``), computing ``compute_slowdown``
    times slower than this machine (a phone beside desktops); without either, the tier keeps ``clients``' link."""

    share: float
    link: LinkSpec | None = None
    profile: str | None = None
    compute_slowdown: float = 1.0

    @field_validator("share")
    @classmethod
    def _share(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError(f"share is a fraction of the clients in (0, 1], got {value}")
        return value

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None:
            get_profile(value)
        return value

    @field_validator("compute_slowdown")
    @classmethod
    def _slowdown(cls, value: float) -> float:
        if not value >= 1:
            raise ValueError(
                f"compute_slowdown must be at least 1 (a tier can only compute slower than this machine), got {value}"
            )
        return value

    @model_validator(mode="after")
    def _link_or_profile(self) -> TierSpec:
        if self.link is not None and self.profile is not None:
            raise ValueError("a tier takes link or profile, not both: write link: {profile: NAME, ...} to adjust one")
        return self

    def link_spec(self, default: LinkSpec) -> LinkSpec:
        """This tier's link (``default``: the network's ``clients`` link, for a tier that names none)."""
        if self.profile is not None:
            return LinkSpec(profile=self.profile)
        return self.link if self.link is not None else default


class NetworkSpec(Frozen):
    """The links every party's traffic crosses (see docs/networks.md).

    ``clients``: each client's access link (``tiers`` split the clients over several); ``server``: the link of
    each server-side party (aggregator, share holders, key authority), shared by all its clients' traffic.
    ``emulation``: ``userspace`` paces every frame in hebench's stream layer; ``kernel`` puts each party in a
    network namespace behind veth pairs shaped by ``tc``; ``model`` runs on loopback and computes the
    transfer times from the recorded bytes (modelled, never measured).

    A key left out (None) is inherited: a configuration's from the suite's network, the suite's from the
    defaults (unlimited links, no tiers, ``userspace``); :meth:`resolved` fills them in.
    """

    clients: LinkSpec | None = None
    server: LinkSpec | None = None
    tiers: tuple[TierSpec, ...] | None = None
    emulation: Literal["userspace", "kernel", "model"] | None = None

    @field_validator("tiers")
    @classmethod
    def _shares_add_up(cls, tiers: tuple[TierSpec, ...] | None) -> tuple[TierSpec, ...] | None:
        total = sum(t.share for t in tiers or ())
        if tiers and abs(total - 1.0) > 1e-6:
            raise ValueError(f"the tiers' shares add up to {total:g}, not 1: adjust the share of each tier")
        return tiers

    def over(self, base: NetworkSpec | None) -> NetworkSpec:
        """This spec's keys over ``base``'s (a configuration's network over the suite's)."""
        if base is None:
            return self
        given = {k: getattr(self, k) for k in type(self).model_fields if getattr(self, k) is not None}
        return base.model_copy(update=given)

    def resolved(self) -> NetworkSpec:
        """Every key set: the ones left out take their defaults."""
        return NetworkSpec(
            clients=self.clients or LinkSpec(),
            server=self.server or LinkSpec(),
            tiers=self.tiers or (),
            emulation=self.emulation or "userspace",
        )

    @property
    def label(self) -> str:
        """The clients' link, or the tiers' links with their shares (``lte 60%+home-broadband 40%``)."""
        clients = self.clients or LinkSpec()
        if not self.tiers:
            return clients.label
        return "+".join(f"{t.link_spec(clients).label} {t.share:.0%}" for t in self.tiers)
