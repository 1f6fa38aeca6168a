"""The suite's ``network:`` block: its key names, named profiles, per-configuration links, and bad input refused
with the field and the fix before any work."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from hebench.config import Suite, load_suite, parse_suite
from hebench.config.link_profiles import PROFILES
from hebench.errors import ParameterError, SuiteError
from hebench.links.plan import MBIT, plan_network
from hebench.runtime.local.network import check_networks

SUITES = Path(__file__).resolve().parents[2] / "suites"
BASE = {"name": "n", "configurations": [{"mode": "raw"}]}


def suite(network: dict, overrides: list[str] | None = None, configurations: list | None = None):
    raw = {**BASE, "network": network, "configurations": configurations or BASE["configurations"]}
    return parse_suite(raw, "s.yaml", overrides)


def test_the_issues_key_names_validate():
    s = suite(
        {
            "clients": {"uplink_mbit": 10, "downlink_mbit": 50, "delay_ms": 20, "jitter_ms": 2, "loss": 0.01},
            "server": {"uplink_mbit": 1000, "downlink_mbit": 1000},
            "tiers": [
                {"share": 0.7, "profile": "lte", "compute_slowdown": 4},
                {"share": 0.3, "link": {"uplink_mbit": 40}, "compute_slowdown": 1},
            ],
            "emulation": "model",
        }
    )
    assert s.network is not None and s.network.emulation == "model" and len(s.network.tiers) == 2
    plan = plan_network(s.network, clients=10, seed=0)
    assert plan.server.up_Bps == 1000 * MBIT and plan.server.down_Bps == 1000 * MBIT


def test_a_profile_fills_every_figure_and_keys_beside_it_override():
    s = suite({"clients": {"profile": "lte", "delay_ms": 10}})
    figures = s.network.clients.figures()
    assert figures["uplink_mbit"] == PROFILES["lte"].uplink_mbit and figures["delay_ms"] == 10
    assert s.network.clients.label == "up 0.75/down 1.6384 Mbit/s, 10 ms"
    assert suite({"clients": {"profile": "lte"}}).network.label == "lte"


def test_every_profile_names_its_public_source():
    for profile in PROFILES.values():
        assert profile.source and profile.stands_for and profile.uplink_mbit > 0 and profile.downlink_mbit > 0


@pytest.mark.parametrize(
    ("override", "field", "fix"),
    [
        ("network.clients.profile=5g", "network.clients.profile", "choose one of lte"),
        ("network.clients.uplink_mbit=0", "network.clients.uplink_mbit", "positive rate in Mbit/s"),
        ("network.server.downlink_mbit=-3", "network.server.downlink_mbit", "positive rate in Mbit/s"),
        ("network.clients.loss=1", "network.clients.loss", "[0, 1)"),
        ("network.clients.loss=-0.1", "network.clients.loss", "[0, 1)"),
        ("network.clients.delay_ms=-1", "network.clients.delay_ms", "cannot be negative"),
        ("network.tiers=[{share: 0.5, profile: lte}]", "network.tiers", "add up to 0.5, not 1"),
        ("network.tiers=[{share: 1, compute_slowdown: 0.5}]", "network.tiers.0.compute_slowdown", "at least 1"),
        ("network.emulation=fast", "network.emulation", "'userspace', 'kernel' or 'model'"),
        ("training.target_accuracy=1.5", "training.target_accuracy", "(0, 1]"),
    ],
)
def test_bad_input_names_the_field_and_the_fix(override, field, fix):
    with pytest.raises(SuiteError) as err:
        parse_suite(copy.deepcopy(BASE), "s.yaml", [override])  # overrides are applied in place
    assert f"field '{field}" in err.value.problem and fix in err.value.problem


def test_set_reaches_the_network_and_each_configurations_own_keys_win():
    s = suite(
        {"server": {"profile": "datacenter"}, "emulation": "userspace"},
        ["network.emulation=model", "configurations.1.network.clients.uplink_mbit=2"],
        [{"mode": "raw", "network": {"clients": {"profile": "lte"}}}, {"mode": "raw", "network": {"clients": {}}}],
    )
    first, second = (s.network_for(c) for c in s.configurations)
    assert first.emulation == second.emulation == "model"  # --set on the suite reaches both
    assert first.server.label == "datacenter" and first.clients.label == "lte"
    assert second.clients.figures()["uplink_mbit"] == 2
    assert [c.label for c in s.configurations] == ["raw@lte", "raw@up 2/down ∞ Mbit/s"]


def test_inheritance_survives_the_suite_being_stored_and_read_back():
    """A run stores its validated suite and revalidates it (``data.clients: all``): a configuration's network
    must still inherit the keys it left out, not take their defaults."""
    s = load_suite(SUITES / "networks.yaml", ["network.emulation=model"])
    again = Suite.model_validate(s.model_dump(mode="json"))
    assert {again.network_for(c).emulation for c in again.configurations} == {"model"}
    assert [c.label for c in again.configurations] == [c.label for c in s.configurations]


def test_the_networks_suite_runs_every_protection_on_three_profiles():
    s = load_suite(SUITES / "networks.yaml")
    links = {s.network_for(c).clients.label for c in s.configurations}
    assert links == {"lte", "home-broadband", "datacenter"}
    assert {c.mode for c in s.configurations} == {"raw", "host-he", "offload", "secagg"}
    assert s.data.dataset == "femnist" and s.model.name == "cnn_dropout"
    assert len(s.configurations) == 15 and s.training.target_accuracy is not None


def test_links_the_run_cannot_apply_are_refused_before_any_work(monkeypatch):
    with pytest.raises(ParameterError, match=r"network\.emulation: userspace links are applied inside hebench's own"):
        check_networks(suite({"clients": {"profile": "lte"}}), "flower")
    remote = parse_suite(
        {
            **BASE,
            "data": {"clients": 1},
            "configurations": [{"mode": "offload", "adapter": "tenseal-ckks"}],
            "offload": {"engines": ["dpu0:7000"], "tls_dir": "certs"},
            "network": {"clients": {"profile": "lte"}},
        }
    )
    with pytest.raises(ParameterError, match="remote offload engines"):
        check_networks(remote, "hebench")
    from hebench.net.shaping import kernel

    caps = kernel.KernelCapabilities(root=False, ip=None, tc=None, problem="it needs root (network namespaces and tc)")
    monkeypatch.setattr(kernel, "kernel_capabilities", lambda: caps)
    with pytest.raises(ParameterError, match=r"network\.emulation: kernel cannot run here: it needs root"):
        check_networks(suite({"emulation": "kernel"}), "hebench")
    check_networks(suite({"emulation": "model"}), "hebench")  # modelled links need nothing
