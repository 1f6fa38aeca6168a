"""SecAgg+ on real authenticated channels, in threads: the sum, dropout recovery, the mask generators; a lying
aggregator refused; parameters Flower cannot represent or a lying aggregator could exploit refused."""

from __future__ import annotations

import base64
import os
import secrets
import threading
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen
from pydantic import ValidationError

from hebench.config import parse_suite
from hebench.errors import PartyError, SuiteError
from hebench.fl.meter import PhaseMeter
from hebench.fl.roster import make_identities
from hebench.net.transport import Message, accept, connect, listen
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.common import CURVE, public_bytes, ring_neighbours
from hebench.protections.secagg.mask_prg import MASK_GENERATORS
from hebench.protections.secagg.params import SEED_BITS, SecAggParams
from hebench.protections.secagg.server import collect_secagg

DOCS = Path(__file__).resolve().parents[3] / "docs"
HBC = SecAggParams(model="honest-but-curious")  # the variant whose lists and unmask requests clients take on trust


class DropsAfterSharing(SecAggClientRound):
    """A client that shares its keys and shares, then dies before its masked upload."""

    def masked_upload(self, vector: np.ndarray) -> None:
        self.channel.close()
        raise SystemExit  # ends the thread


def run_round(params: SecAggParams, vectors: dict[int, np.ndarray], samples: dict[int, int], drop: set[int]):
    key = secrets.token_bytes(32)
    door = listen(key)
    errors: list[BaseException] = []
    identities = make_identities(len(vectors))

    def client(i: int) -> None:
        try:
            ch = connect(door.address, key, "aggregator", 30)
            ch.send(Message("hello", {"client": i}))
            kind = DropsAfterSharing if i in drop else SecAggClientRound
            kind(i, ch, params, PhaseMeter(), identity=identities[i]).run(vectors[i], samples[i], {})
        except SystemExit:
            pass
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=client, args=(i,)) for i in vectors]
    for t in threads:
        t.start()
    channels = {}
    for _ in vectors:
        ch = accept(door, "client", 30)
        channels[int(ch.recv("hello").meta["client"])] = ch
    meter = PhaseMeter()
    result = collect_secagg(channels, params, meter)
    for t in threads:
        t.join(30)
    door.close()
    assert not errors, errors
    return result, meter.take()["phases"]


def fedavg(vectors, samples, members):
    total = sum(samples[i] for i in members)
    return sum(samples[i] / total * vectors[i].astype(np.float64) for i in members)


def inputs(n: int, size: int = 500):
    rng = np.random.default_rng(7)
    return {i: rng.normal(0, 1, size).astype(np.float32) for i in range(n)}, {i: 10 + 3 * i for i in range(n)}


@pytest.mark.parametrize(("prg", "model"), [("full-key", "active"), ("flwr-32bit", "honest-but-curious")])
def test_unmasked_sum_equals_plain_fedavg_within_the_quantisation_bound(prg, model):
    params = SecAggParams(num_shares=3, reconstruction_threshold=2, prg=prg, model=model)
    vectors, samples = inputs(5)
    result, phases = run_round(params, vectors, samples, drop=set())
    step = 2 * params.clipping_range / params.quantization_range
    bound = len(vectors) * step  # each client's stochastic rounding errs by under one step (weights sum to 1)
    err = np.abs(result.average - fedavg(vectors, samples, vectors))
    assert err.max() < bound
    assert err.max() > 0  # quantised, not the plain vector passed through
    stages = {"advertise_keys", "share_keys", "collect_masked", "unmask"}
    assert set(phases) == (stages | {"consistency"} if model == "active" else stages)


@pytest.mark.parametrize("model", ["active", "honest-but-curious"])
def test_a_client_dropping_after_sharing_its_keys_leaves_the_correct_sum_of_the_survivors(model):
    params = SecAggParams(num_shares=5, reconstruction_threshold=3, model=model)
    vectors, samples = inputs(5)
    result, _ = run_round(params, vectors, samples, drop={2})
    survivors = [0, 1, 3, 4]
    assert result.survivors == tuple(survivors) and result.dropped == (2,)
    step = 2 * params.clipping_range / params.quantization_range
    total_w = sum(samples[i] for i in survivors) / sum(samples.values())
    err = np.abs(result.average - fedavg(vectors, samples, survivors))
    assert err.max() < len(survivors) * step / total_w
    assert sum(result.weights.values()) == pytest.approx(1.0)


def test_a_client_refuses_to_reveal_both_secrets_of_one_peer():
    class Fake:
        def __init__(self, msg):
            self.msg, self.sent = msg, []

        def recv(self, kind):
            return self.msg

        def send(self, msg):
            self.sent.append(msg)

    greedy = Message("sa_unmask", {"survivors": [1], "dropped": [1]})
    c = SecAggClientRound(0, Fake(greedy), HBC, PhaseMeter())
    c.held = {1: (b"seed", b"key")}
    with pytest.raises(PartyError, match="both secrets"):
        c.unmask()


def test_masks_differ_by_generator_and_the_flwr_one_folds_the_key_to_one_seed():
    key_a = b"A" * 40 + b"xyzw"
    # two keys whose 32-bit XOR-folds agree give flwr's generator the same mask; full-key tells them apart
    key_b = b"A" * 36 + b"xyzw" + b"AAAA"
    flwr, full = MASK_GENERATORS["flwr-32bit"], MASK_GENERATORS["full-key"]
    assert np.array_equal(flwr(key_a, 2**32, 100), flwr(key_b, 2**32, 100))
    assert not np.array_equal(full(key_a, 2**32, 100), full(key_b, 2**32, 100))


def test_security_note_states_the_work_factor_for_the_neighbour_count():
    note = SecAggParams(num_shares=3, prg="flwr-32bit").security(clients=8)
    assert note["neighbours"] == 2 and note["mask_seed_bits"] == 28 and note["work_factor_bits"] == 56
    assert "28 bits" in note["note"]
    assert SecAggParams(num_shares=3).security(clients=2)["work_factor_bits"] == 128  # one neighbour, full key


def test_flowers_folded_seed_has_28_bits_as_recorded_and_documented(monkeypatch):
    """flwr 1.41 folds the base64 *text* of the key: ASCII bytes never set their top bit. Seeds are taken from
    Flower's own pseudo_rand_gen (its RandomState call captured), for real ECDH keys and 20,000 random ones."""
    seeds: list[int] = []
    real = np.random.RandomState

    def capture(seed: int) -> np.random.RandomState:
        seeds.append(int(seed))
        return real(seed)

    monkeypatch.setattr(np.random, "RandomState", capture)
    pairs = [(ec.generate_private_key(CURVE), ec.generate_private_key(CURVE)) for _ in range(20)]
    keys = [generate_shared_key(a, b.public_key()) for a, b in pairs]  # what SecAgg+ masks are seeded from
    keys += [base64.urlsafe_b64encode(os.urandom(32)) for _ in range(20_000)]  # the same format, faster
    for key in keys:
        pseudo_rand_gen(key, 2**32, [(1,)])
    union = 0
    for seed in seeds:
        union |= seed
    assert len(seeds) == len(keys) and union == 0x7F7F7F7F  # 4 bytes x 7 bits
    assert bin(union).count("1") == SEED_BITS["flwr-32bit"] == 28
    assert len(set(seeds)) > 19_900  # the 28 bits do vary: 20,000 draws from 2^28 rarely collide
    assert "2^28" in (DOCS / "protections.md").read_text()


def test_unsafe_parameters_are_refused_with_the_field_and_the_fix():
    with pytest.raises(
        ValidationError, match=r"quantization_range 1099511627776 exceeds 2\^31 - 1.*at most 2147483647"
    ):
        SecAggParams(quantization_range=2**40)  # Flower's quantiser casts to int32: 2^40 corrupted the sum
    with pytest.raises(ValidationError, match=r"at most half of num_shares 5.*at least 3"):
        SecAggParams(num_shares=5, reconstruction_threshold=2)
    SecAggParams(num_shares=5, reconstruction_threshold=3)
    SecAggParams(num_shares=4, reconstruction_threshold=3)  # 4 shares: a ring of 4 neighbours, 5 holders
    suite = {"name": "x", "data": {"dataset": "digits", "clients": 3}}
    wide = {"mode": "secagg", "params": {"quantization_range": 2**31 - 1}}
    with pytest.raises(SuiteError, match=r"3 clients per round x quantization_range 2147483647 reach modulus"):
        parse_suite({**suite, "configurations": [wide]})
    parse_suite({**suite, "configurations": [{**wide, "params": {**wide["params"], "modulus": 2**34}}]})


class LyingAggregator:
    """Runs an honest-but-curious round honestly up to the masked uploads, then asks its victim twice, with
    different lists (the red team's aggregator, for every lie: hebench.protections.secagg.adversary)."""

    def __init__(self, params: SecAggParams, clients: int) -> None:
        self.params, self.key, self.clients = params, secrets.token_bytes(32), clients
        self.door = listen(self.key)

    def channels(self) -> dict:
        found = {}
        for _ in range(self.clients):
            ch = accept(self.door, "client", 30)
            found[int(ch.recv("hello").meta["client"])] = ch
        return found

    def client(self, i: int, stages) -> None:
        ch = connect(self.door.address, self.key, "aggregator", 30)
        ch.send(Message("hello", {"client": i}))
        stages(SecAggClientRound(i, ch, self.params, PhaseMeter()))

    def up_to_masked(self, channels: dict) -> None:
        keys = {i: ch.recv("sa_keys") for i, ch in channels.items()}
        graph = ring_neighbours(sorted(keys), self.params)
        for i, ch in channels.items():
            parts = tuple(p for j in graph[i] for p in keys[j].parts)
            ch.send(Message("sa_neighbours", {"weight": 1 / len(keys), "neighbours": graph[i]}, parts))
        inbox: dict[int, list] = {i: [] for i in channels}
        for i, ch in channels.items():
            msg = ch.recv("sa_shares")
            for j, blob in zip(msg.meta["to"], msg.parts, strict=True):
                inbox[int(j)].append((i, blob))
        for j, ch in channels.items():
            ch.send(Message("sa_inbox", {"from": [i for i, _ in inbox[j]]}, tuple(b for _, b in inbox[j])))
        for ch in channels.values():  # the masked upload streams in chunks, then its end message
            while ch.recv().kind != "sa_masked":
                pass


def test_a_client_refuses_a_later_request_that_contradicts_an_earlier_one():
    """Client 1 is first told client 0 survived (it reveals 0's seed share), then that 0 dropped (asking for 0's
    mask key share): with t = 2 of 3 holders, both shares of one holder plus one more unmask client 0's upload."""
    server = LyingAggregator(SecAggParams(num_shares=3, reconstruction_threshold=2, model=HBC.model), clients=3)
    outcome: dict[int, BaseException | None] = {}

    def victim(c: SecAggClientRound) -> None:
        c.advertise_keys(10, {})
        c.share_keys()
        c.masked_upload(np.zeros(50, np.float32))
        c.unmask()
        try:
            c.unmask()
            outcome[1] = None
        except PartyError as err:
            outcome[1] = err

    def honest(c: SecAggClientRound) -> None:
        c.run(np.zeros(50, np.float32), 10, {})

    threads = [threading.Thread(target=server.client, args=(i, victim if i == 1 else honest)) for i in range(3)]
    for t in threads:
        t.start()
    channels = server.channels()
    server.up_to_masked(channels)
    for i in (0, 2):
        channels[i].send(Message("sa_unmask", {"survivors": [0, 1, 2], "dropped": []}))
        channels[i].recv("sa_reveal")
    channels[1].send(Message("sa_unmask", {"survivors": [0, 1, 2], "dropped": []}))
    first = channels[1].recv("sa_reveal")
    assert 0 in first.meta["seeds_of"]
    channels[1].send(Message("sa_unmask", {"survivors": [1, 2], "dropped": [0]}))
    for t in threads:
        t.join(30)
    server.door.close()
    assert isinstance(outcome[1], PartyError) and "both survivor and dropped" in outcome[1].problem


def test_a_client_refuses_to_call_itself_dropped_or_to_share_with_too_many_neighbours():
    class Fake:
        def __init__(self, *msgs):
            self.msgs, self.sent = list(msgs), []

        def recv(self, kind):
            return self.msgs.pop(0)

        def send(self, msg):
            self.sent.append(msg)

    params = SecAggParams(num_shares=3, reconstruction_threshold=2, model=HBC.model)
    c = SecAggClientRound(0, Fake(Message("sa_unmask", {"survivors": [1], "dropped": [0]})), params, PhaseMeter())
    c.held = {0: (b"seed", b"key")}
    with pytest.raises(PartyError, match="client 0 dropped, to the client itself"):
        c.unmask()
    # a ring of 3 shares gives 2 neighbours; an aggregator that hands out 4 gets t = 2 shares of each of
    # a client's secrets from 4 different holders
    keys = [public_bytes(ec.generate_private_key(CURVE)) for _ in range(8)]
    crowded = Message("sa_neighbours", {"weight": 0.2, "neighbours": [1, 2, 3, 4]}, tuple(keys))
    c = SecAggClientRound(0, Fake(crowded), params, PhaseMeter())
    c.share_key, c.mask_key = ec.generate_private_key(CURVE), ec.generate_private_key(CURVE)
    with pytest.raises(PartyError, match="given 4 neighbours"):
        c.share_keys()
    assert c.channel.sent == []  # no share left the client


def test_a_client_whose_inbox_holds_too_few_neighbours_shares_refuses_to_upload():
    """An aggregator that withholds a client's neighbours' shares would have it mask with nobody but itself, then
    rebuild its self mask from its seed's shares and read its update: the client refuses (as Flower's mod does)."""

    class Fake:
        def __init__(self, *msgs):
            self.msgs, self.sent = list(msgs), []

        def recv(self, kind):
            return self.msgs.pop(0)

        def send(self, msg):
            self.sent.append(msg)

    params = SecAggParams(num_shares=3, reconstruction_threshold=2, model=HBC.model)  # 2 neighbours; t = 2 of 3
    keys = [public_bytes(ec.generate_private_key(CURVE)) for _ in range(4)]
    told = Message("sa_neighbours", {"weight": 0.5, "neighbours": [1, 2]}, tuple(keys))
    c = SecAggClientRound(0, Fake(told, Message("sa_inbox", {"from": []}, ())), params, PhaseMeter())
    c.share_key, c.mask_key = ec.generate_private_key(CURVE), ec.generate_private_key(CURVE)
    with pytest.raises(PartyError, match="shares from 0 of its 2 neighbours"):
        c.share_keys()
    assert [m.kind for m in c.channel.sent] == ["sa_shares"]  # it shared its own keys, and stops there


def test_an_active_client_without_the_trusted_set_ups_key_refuses_to_start():
    with pytest.raises(PartyError, match="no signing key of its own from the trusted set-up"):
        SecAggClientRound(0, None, SecAggParams(), PhaseMeter())  # type: ignore[arg-type]
    other = make_identities(2)[1]
    with pytest.raises(PartyError, match="no signing key of its own"):  # another client's key is not its own
        SecAggClientRound(0, None, SecAggParams(), PhaseMeter(), identity=other)  # type: ignore[arg-type]
    SecAggClientRound(0, None, HBC, PhaseMeter())  # type: ignore[arg-type]  # the variant without identities


def test_the_active_model_keeps_more_than_half_the_round_and_t_at_every_stage():
    params = SecAggParams(num_shares=5, reconstruction_threshold=3)
    assert [params.min_members(n) for n in (3, 5, 8, 32, 100)] == [3, 3, 5, 17, 51]
    assert [params.quorum(n) for n in (3, 5, 8)] == [2, 3, 5]
    assert SecAggParams(num_shares=5, reconstruction_threshold=3, model="honest-but-curious").min_members(100) == 3
    suite = {"name": "x", "data": {"dataset": "digits", "clients": 2}}
    with pytest.raises(SuiteError, match="2 clients per round are fewer than reconstruction_threshold 3"):
        parse_suite(
            {
                **suite,
                "configurations": [{"mode": "secagg", "params": {"num_shares": 5, "reconstruction_threshold": 3}}],
            }
        )


def test_a_share_its_pairwise_key_does_not_open_is_refused_by_name():
    """A share forged, or replayed from another round (whose keys were others), is a PartyError, not a crash."""

    class Fake:
        def __init__(self, *msgs):
            self.msgs, self.sent = list(msgs), []

        def recv(self, kind):
            return self.msgs.pop(0)

        def send(self, msg):
            self.sent.append(msg)

    keys = [public_bytes(ec.generate_private_key(CURVE)) for _ in range(4)]
    told = Message("sa_neighbours", {"weight": 0.5, "neighbours": [1, 2]}, tuple(keys))
    inbox = Message("sa_inbox", {"from": [1]}, (b"gAAAAA" + b"x" * 80,))
    c = SecAggClientRound(0, Fake(told, inbox), HBC, PhaseMeter())  # type: ignore[arg-type]
    c.share_key, c.mask_key = ec.generate_private_key(CURVE), ec.generate_private_key(CURVE)
    with pytest.raises(PartyError, match="a share from 1 that its pairwise key does not open"):
        c.share_keys()
