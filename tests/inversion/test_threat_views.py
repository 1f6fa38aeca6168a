"""What each adversary obtains, through the protocol's own code: a colluding client's key set opens the victim's
real ciphertext; an observer reads the key set off an unencrypted wire; fewer than all share holders see uniform
words, all of them every update; the threats suite's raw and host-he plans obtain their views from live rounds with
the red team's party in them."""

from __future__ import annotations

import queue
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from hebench.config import parse_suite
from hebench.crypto import create_adapter, load_adapter
from hebench.errors import CiphertextError
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.party import Credentials, PartyContext
from hebench.inversion.campaign import plans_for
from hebench.inversion.evaluate import _observation, init_model
from hebench.inversion.views.conduits import Protocol, flat, he_key, shares
from hebench.net.certs import make_party_certificates
from hebench.net.transport import Door, accept, connect
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import combine, encode, quantizer, split
from tests.conftest import INSTALLED
from tests.net.test_tls_doors import Tap

CKKS = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")
KEY = b"k" * 32
ROOT = Path(__file__).resolve().parents[2]


def _upload(size: int = 3000) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(3)
    return (torch.randn(size // 3, generator=gen) * 0.1, torch.randn(2 * size // 3, generator=gen) * 0.01)


@CKKS
def test_a_colluding_client_decrypts_the_victims_real_ciphertext():
    # Arrange: the epoch's key set as the key authority makes it; every client loads the same secret set
    authority = create_adapter("tenseal-ckks", {})
    authority.keygen()
    secret = authority.export_keys(secret=True)
    victim, colluder = load_adapter(secret), load_adapter(secret)
    upload = flat(_upload()).astype(np.float32)
    # Act: the victim encrypts its upload as it sends it; the colluder decrypts what the aggregator received
    sent = victim.serialize(victim.encrypt(upload))
    stolen = colluder.decrypt(colluder.deserialize(sent))
    # Assert: the colluder reads exactly what the victim itself would decrypt, i.e. the upload (CKKS precision)
    assert np.array_equal(stolen, victim.decrypt(victim.deserialize(sent)))
    assert np.abs(stolen - upload).max() < 1e-5
    # control: another epoch's key set does not read it (the adapter refuses a ciphertext of another key)
    other = create_adapter("tenseal-ckks", {})
    other.keygen()
    with pytest.raises(CiphertextError, match="another key"):
        load_adapter(other.export_keys(secret=True)).deserialize(sent)
    # the conduit the threat plans use gives the same view
    seen = he_key(Protocol("host-he", "tenseal-ckks", {}), _upload())
    assert seen.gradients is not None and np.abs(flat(seen.gradients) - flat(_upload())).max() < 1e-5


@CKKS
def test_a_colluding_client_plan_sees_the_update_the_raw_plan_sees():
    suite = parse_suite(
        {
            "name": "collude",
            "data": {"dataset": "natural", "clients": 2},
            "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": "tenseal-ckks"}],
            "privacy": {"images": 1, "seeds": 1, "threats": [{"adversary": "colluding-clients", "k": 1}]},
        }
    )
    plans = {p.config: p for p in plans_for(suite)}
    raw, host = plans["raw"], plans["host-he/tenseal-ckks"]
    # both views come from a live round with the red team's aggregator in it (host-he: with a colluder's key set)
    assert raw.conduit == host.conduit == "red-team" and host.obtains == "every-update"
    assert host.evidence.endswith("test_red_team_host_he_colluding_clients_decrypt_every_update")
    from hebench.data.registry import load_federated

    data = load_federated(raw.data, raw.seed)
    model = init_model(raw.model, data.input_shape, data.num_classes, 0)
    (seen_raw, _, _), (seen_host, _, _) = (_observation(p, data, model, 0, 0) for p in (raw, host))
    simulated = replace(raw, conduit=None, protocol=None)  # the victim's gradient, computed without any protocol
    (exact, _, _) = _observation(simulated, data, model, 0, 0)
    for a, b, c in zip(seen_raw.gradients, seen_host.gradients, exact.gradients, strict=True):
        scale = float(c.abs().max())  # 1e-6 of it measured: float32 rounding of a step, CKKS's approximation
        assert torch.allclose(a, c, atol=2e-5 * scale + 1e-7) and torch.allclose(b, c, atol=2e-5 * scale + 1e-7)


def _pushed_key_set(tmp_path, tls: bool) -> tuple[bytes, bytes]:
    """The key authority's EpochKeys pushes one epoch's secret set to a client through a tap: (the set the client
    received, everything the observer saw)."""
    suite = parse_suite(
        {
            "name": "wire",
            "data": {"dataset": "digits", "clients": 1},
            "configurations": [{"mode": "host-he", "adapter": "tenseal-ckks"}],
        }
    )
    certs = make_party_certificates(tmp_path, ("key-authority", "client-0"), ("key-authority",)) if tls else {}
    ctx = PartyContext(suite, suite.configurations[0], tmp_path, Credentials(), "run", 0, (1, 8, 8), 10)
    door = Door(KEY, tls=certs.get("key-authority"))
    tap = Tap(door.address)
    try:
        client = connect(tap.address, KEY, "key authority", 20, tls=certs.get("client-0"), server="key-authority")
        holder = accept(door, "a client", 20)
        EpochKeys(ctx, [holder], queue.Queue(), 1).get(0)
        received = client.recv("keys").parts[0]
        client.close()
        holder.close()
    finally:
        door.close()
    return received, tap.finished()["to dialler"]


@CKKS
def test_without_tls_an_observer_reads_the_secret_key_set_off_the_wire(tmp_path):
    received, wire = _pushed_key_set(tmp_path / "tcp", tls=False)
    assert load_adapter(received).has_secret_key
    assert received in wire  # the whole secret set, contiguous: an observer loads it and decrypts every upload
    stolen = load_adapter(wire[wire.index(received) : wire.index(received) + len(received)])
    victim = load_adapter(received)
    upload = flat(_upload()).astype(np.float32)
    sent = victim.serialize(victim.encrypt(upload))
    assert np.abs(stolen.decrypt(stolen.deserialize(sent)) - upload).max() < 1e-5
    # with TLS the same push shows the observer no window of the set
    received, wire = _pushed_key_set(tmp_path / "tls", tls=True)
    assert load_adapter(received).has_secret_key and received[1000:1064] not in wire and len(wire) > len(received)


PARAMS = SecretSharingParams(aggregators=3, bits=24, clip=4.0)


def _top_bytes_p(words: np.ndarray) -> float:
    """χ² p-value of the top byte of 64-bit words against uniform over 256 values."""
    counts = np.bincount((words >> np.uint64(56)).astype(np.int64), minlength=256)
    return float(chisquare(counts).pvalue)


def test_fewer_than_all_share_holders_see_uniform_words():
    update = np.random.default_rng(2).normal(0, 0.5, 200_000)
    encoded = encode(update, 1, PARAMS, np.random.default_rng(0))
    pieces = split(encoded, PARAMS.aggregators)
    colluding = combine(pieces[:2])  # two of three holders add their shares
    assert _top_bytes_p(colluding) > 1e-6  # uniform (a fresh CSPRNG draw: fails about once in a million runs)
    assert not np.array_equal(colluding, encoded)
    assert _top_bytes_p(encoded) < 1e-12  # control: the same test rejects the encoded update itself
    assert shares(Protocol("secret-sharing", "plain", PARAMS.model_dump()), _upload(), k=2).gradients is None


def test_all_share_holders_recover_every_update_exactly():
    upload = _upload()
    pieces = split(encode(flat(upload), 1, PARAMS, np.random.default_rng(0)), PARAMS.aggregators)
    assert np.array_equal(combine(pieces), encode(flat(upload), 1, PARAMS, np.random.default_rng(0)))
    seen = shares(Protocol("secret-sharing", "plain", PARAMS.model_dump()), upload, k=3)
    assert seen.gradients is not None
    assert np.abs(flat(seen.gradients) - flat(upload)).max() <= quantizer(PARAMS).max_error


@CKKS
def test_the_threats_suites_raw_and_host_he_views_come_from_live_rounds_with_the_red_teams_party():
    import yaml

    from hebench.data.registry import load_federated
    from hebench.inversion.attacks.trap_weights import plant_imprint
    from hebench.inversion.recipes import load_recipe

    suite = parse_suite(yaml.safe_load((ROOT / "suites" / "threats.yaml").read_text()))
    plans = [p for p in plans_for(suite) if p.batch_size == 1]
    mine = [p for p in plans if p.config.split("/")[0] in ("raw", "host-he")]  # selective, DP and TLS rows too
    assert all(p.conduit == "red-team" for p in mine) and {p.view for p in mine} == {"raw", "he", "selective"}
    by_name = {p.name: p for p in plans}
    data = load_federated(plans[0].data, plans[0].seed)

    def seen(name: str):
        plan = by_name[name]
        model = init_model(plan.model, data.input_shape, data.num_classes, 0)
        imprint = load_recipe(plan.attack).imprint
        if imprint is not None:
            model = plant_imprint(model, data.input_shape, data.test_x, imprint)
        return _observation(plan, data, model, 0, 0)[:2]

    raw, _ = seen("raw/b1/malicious-model-inconsistency")  # the victim's gradient on the real model, in plaintext
    exact, _ = _observation(replace(by_name["raw/b1"], conduit=None, protocol=None), data, raw.model, 0, 0)[:2]
    assert all(torch.allclose(a, b, atol=2e-5 * float(b.abs().max()) + 1e-7)
               for a, b in zip(raw.gradients, exact.gradients, strict=True))  # fmt: skip
    assert seen("raw/tls/b1/observer")[0].gradients is None  # TLS records only
    assert seen("raw/tls/b1/malicious-trap-weights")[0].gradients is not None  # TLS does not hide it from the server
    assert seen("host-he/tenseal-ckks/b1/malicious-trap-weights")[0].gradients is None
    visible, info = seen("host-he/tenseal-ckks/sel-magnitude-0.1/b1")  # the plaintext 90 %, read off the live round
    assert visible.gradients is not None and abs(info["encrypted_fraction"] - 0.1) < 0.01
    assert abs(visible.visible_fraction - 0.9) < 0.01


def test_a_red_team_conduit_names_its_view_and_only_it_does():
    from hebench.protections.threats import Conduit, ConduitRule

    with pytest.raises(ValueError, match="names its view"):
        ConduitRule(Conduit.RED_TEAM)
    with pytest.raises(ValueError, match="names its view"):
        ConduitRule(Conduit.HE_KEY, view="hebench.protections.raw.adversary:red_team_view")


def test_the_threats_suites_secagg_malicious_plans_are_the_red_teams_lying_aggregator_against_live_clients():
    """Each of secagg's strategies (both variants) reaches the attack as what the red team's aggregator read off live
    SecAgg+ clients: the active model's refusals give nothing, its split graph a sum of two of the three clients, and
    against the honest-but-curious variant N1-N3 give the victim's own gradient; a replay unmasks to noise. The
    observer reads the round's sum off the victim's wire."""
    import yaml

    from hebench.data.registry import load_federated

    suite = parse_suite(yaml.safe_load((ROOT / "suites" / "threats.yaml").read_text()))
    plans = [p for p in plans_for(suite) if p.batch_size == 1]
    by_name = {p.name: p for p in plans}
    lies = [p for p in plans if p.config.startswith("secagg") and p.adversary == "malicious-aggregator"]
    live = {p.strategy for p in lies if p.conduit == "red-team"}
    assert live == {"trap-weights", "dropout-lie", "withhold-neighbours", "forge-neighbours", "split-graph", "replay"}
    data = load_federated(plans[0].data, plans[0].seed)
    model = init_model(plans[0].model, data.input_shape, data.num_classes, 0)

    def seen(name: str):
        obs, info, _ = _observation(by_name[name], data, model, 0, 0)
        return obs, info.get("detected")

    def exact(clients: int) -> tuple[torch.Tensor, ...]:  # the first clients' mean gradient, without any protocol
        plain = replace(by_name["raw/b1"], conduit=None, protocol=None, clients=clients)
        return _observation(plain, data, model, 0, 0)[0].gradients

    def close(got: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...]) -> bool:
        step = 3 * 16 / 2**22 / 0.1  # 3 clients' quantisation steps of the model, over the learning rate
        pairs = zip(got, want, strict=True)
        return all(torch.allclose(a, b, atol=step + 1e-3 * float(b.abs().max())) for a, b in pairs)

    for strategy, why in [
        ("dropout-lie", "a round must keep"),
        ("withhold-neighbours", "1 members for a round of 3"),
        ("forge-neighbours", "not signed by their keys in the roster"),
    ]:
        obs, detected = seen(f"secagg/b1/malicious-{strategy}")
        assert obs.gradients is None and why in detected
    part, _ = seen("secagg/b1/malicious-split-graph")  # the majority part {0, 1}; client 2 refused its list of one
    assert part.clients == 2 and close(part.gradients, exact(2))
    trap, _ = seen("secagg/b1/malicious-trap-weights")
    assert trap.clients == 3 and trap.gradients is not None
    for strategy in ("dropout-lie", "withhold-neighbours", "forge-neighbours", "split-graph"):
        victim, detected = seen(f"secagg/honest-but-curious/b1/malicious-{strategy}")
        assert victim.clients == 1 and detected is None and close(victim.gradients, exact(1))
    observed, _ = seen("secagg/b1/observer")  # the aggregate streamed back in the clear, off the victim's wire
    assert observed.clients == 3 and close(observed.gradients, exact(3))
    replayed, _ = seen("secagg/b1/malicious-replay")
    honest = exact(3)
    assert replayed.gradients is not None and not close(replayed.gradients, honest)
    assert max(float((a - b).abs().max()) for a, b in zip(replayed.gradients, honest, strict=True)) > 1e3


@CKKS
@pytest.mark.parametrize("mode", ["decryptor-he", "offload"])
def test_the_threats_suites_decryptor_he_and_offload_plans_run_the_red_teams_aggregator_against_live_parties(mode):
    """decryptor-he's and offload's aggregator, alone or lying, and their colluding clients: each plan's view from a
    live round with hebench's key authority, decryptor or engines, and clients. A colluder reads the one victim the
    aggregator substituted for the round's aggregate (its gradient, to CKKS's precision); without one, ciphertext
    (and a sealed answer): nothing."""
    import yaml

    from hebench.data.registry import load_federated

    suite = parse_suite(yaml.safe_load((ROOT / "suites" / "threats.yaml").read_text()))
    plans = {p.name: p for p in plans_for(suite) if p.batch_size == 1}
    mine = [p for p in plans.values() if p.config.startswith(mode) and p.adversary != "observer"]
    live = {p.name.rsplit("/", 1)[-1] for p in mine if p.conduit == "red-team"}
    assert live == {"b1", "collude-1", "collude-2", "malicious-model-inconsistency", "malicious-trap-weights"}
    data = load_federated(plans["raw/b1"].data, plans["raw/b1"].seed)
    model = init_model(plans["raw/b1"].model, data.input_shape, data.num_classes, 0)
    exact = _observation(replace(plans["raw/b1"], conduit=None, protocol=None), data, model, 0, 0)[0].gradients
    read = _observation(plans[f"{mode}/tenseal-ckks/b1/collude-1"], data, model, 0, 0)[0]
    assert read.clients == 1
    assert all(torch.allclose(a, b, atol=1e-3 * float(b.abs().max()) + 1e-5)
               for a, b in zip(read.gradients, exact, strict=True))  # fmt: skip
    for name in ("b1", "b1/malicious-model-inconsistency"):
        assert _observation(plans[f"{mode}/tenseal-ckks/{name}"], data, model, 0, 0)[0].gradients is None


def test_the_threats_suites_secret_sharing_plans_run_the_red_teams_aggregator_0_against_live_holders():
    """secret sharing: aggregator 0 with k - 1 holders, with colluding clients, alone or lying, and the observer, in a
    live round with hebench's share holders and clients. All 3 holders read the victim's gradient (to the shares'
    quantisation), 2 of 3 nothing; the colluders' rebuilt sum less their uploads is the others' mean (2 clients)
    or, with every other client colluding, the victim's; an observer of the victim's wires without TLS, every
    share of its upload: its gradient; aggregator 0 alone or lying: nothing."""
    import yaml

    from hebench.data.registry import load_federated
    from hebench.protections.sharing.ring_shares import quantizer

    suite = parse_suite(yaml.safe_load((ROOT / "suites" / "threats.yaml").read_text()))
    plans = {p.name: p for p in plans_for(suite) if p.batch_size == 1}
    mine = [p for p in plans.values() if p.config.startswith("secret-sharing")]
    assert mine and all(p.conduit == "red-team" for p in mine)
    data = load_federated(plans["raw/b1"].data, plans["raw/b1"].seed)
    model = init_model(plans["raw/b1"].model, data.input_shape, data.num_classes, 0)
    step = quantizer(SecretSharingParams(aggregators=3)).step / 0.1  # one step of the model, over the learning rate

    def exact(clients: int) -> tuple[torch.Tensor, ...]:
        plain = replace(plans["raw/b1"], conduit=None, protocol=None, clients=clients)
        return _observation(plain, data, model, 0, 0)[0].gradients

    def seen(name: str):
        return _observation(plans[f"secret-sharing-3/b1/{name}"], data, model, 0, 0)[0]

    for name, clients in (("holders-3", 1), ("collude-2", 1), ("collude-1", 2), ("observer", 1)):
        obs = seen(name)
        assert obs.clients == clients and obs.gradients is not None
        assert all(torch.allclose(a, b, atol=6 * step + 1e-6 * float(b.abs().max()))
                   for a, b in zip(obs.gradients, exact(clients), strict=True)), name  # fmt: skip
    for name in ("holders-2", "malicious-trap-weights"):
        assert seen(name).gradients is None
