"""The red team against secagg: every cell of its threat rules (``hebench/protections/secagg/spec.py``, both variants
of ``params.model``) earned by a lying aggregator that speaks the real protocol to live clients (threads over
authenticated loopback channels, :mod:`hebench.protections.secagg.adversary`). Each test checks that the adversary
obtains what the cell says and no more; issue #36's N1-N3 succeed against the honest-but-curious variant (its row's
truth) and fail against the active one."""

from __future__ import annotations

import secrets
import threading
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hebench.errors import PartyError, PeerClosedError
from hebench.fl.meter import PhaseMeter
from hebench.fl.roster import make_identities
from hebench.fl.streams import send_aggregate
from hebench.inversion.views.conduits import Protocol, flat, secagg
from hebench.net.messages import MessageKind
from hebench.net.transport import Message, accept, connect, listen, read_transcript
from hebench.protections import get_mode
from hebench.protections.secagg.adversary import Obtained, attack
from hebench.protections.secagg.client import DIGEST_BYTES, SecAggClientRound
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import secagg_round
from hebench.protections.selective.split import PLAIN
from hebench.protections.threats import Adversary, Obtains, Strategy

ACTIVE, HBC = "active", "honest-but-curious"
VARIANTS = (ACTIVE, HBC)
STEP = 2 * SecAggParams().clipping_range / SecAggParams().quantization_range  # one quantisation step
MODEL_A, MODEL_B = b"a" * DIGEST_BYTES, b"b" * DIGEST_BYTES  # the victim's model, the dead one


def _params(model: str, shares: int = 3, t: int = 2, **more) -> SecAggParams:
    return SecAggParams(num_shares=shares, reconstruction_threshold=t, model=model, **more)


def _vectors(n: int, seed: int = 3) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i: rng.normal(0, 0.3, 200).astype(np.float32) for i in range(n)}


def _mean(vectors: dict[int, np.ndarray], clients) -> np.ndarray:
    return np.mean([vectors[i].astype(np.float64) for i in clients], axis=0)


def _reads_victim(got: Obtained, vectors: dict[int, np.ndarray]) -> bool:
    """The aggregator read the victim's update alone, to within the quantisation (n steps over its weight)."""
    return got.victim is not None and float(np.abs(got.victim - vectors[0]).max()) < len(vectors) * STEP


def _nothing_of_the_victim(got: Obtained, vectors: dict[int, np.ndarray]) -> None:
    """No more than the cell: the victim's update is neither read alone nor the whole of any sum obtained."""
    assert got.victim is None or float(np.abs(got.victim - vectors[0]).max()) > 1000 * STEP
    for clients, fedavg in got.sums.items():
        assert clients != (0,) and float(np.abs(fedavg - vectors[0]).max()) > 1000 * STEP


def _obtains(
    variant: str, strategy: Strategy | None, adversary: Adversary = Adversary.MALICIOUS, k: int = 0
) -> Obtains:
    spec = get_mode("secagg")
    return spec.outcome(adversary, k=k, strategy=strategy, clients=5, params=SecAggParams(model=variant)).obtains


# -- the honest-but-curious aggregator and colluding clients (both variants) ------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_red_team_secagg_aggregator_obtains_the_survivors_sum(variant):
    """Following the protocol but keeping each upload apart, the aggregator unmasks the sum and nothing else; and
    a round left with fewer than ``min_members`` (4 of 5 gone before advertising) is skipped, not summed."""
    from tests.faults.test_secagg_lost_stages import run_round

    assert _obtains(variant, None, Adversary.AGGREGATOR) is Obtains.SUM
    vectors = _vectors(5)
    got = attack(None, vectors, _params(variant))
    assert not got.refusals and list(got.sums) == [(0, 1, 2, 3, 4)]
    assert np.abs(got.sums[(0, 1, 2, 3, 4)] - _mean(vectors, range(5))).max() < 5 * STEP
    _nothing_of_the_victim(got, vectors)
    assert got.victim is None  # the victim's pairwise masks stay: its neighbours' mask keys are never revealed
    params = _params(variant)
    killed = dict.fromkeys((1, 2, 3, 4), "before_keys")
    with pytest.raises(PartyError, match=f"fewer than the {params.min_members(5)} a round must keep"):
        run_round(params, vectors, dict.fromkeys(vectors, 10), killed)


@pytest.mark.parametrize("variant", VARIANTS)
def test_red_team_secagg_colluding_clients_subtract_their_updates(variant):
    """Through the campaign's own conduit: k colluders subtract their updates from the real sum and get the mean
    of the others, not the victim's."""
    assert _obtains(variant, None, Adversary.COLLUDING_CLIENTS, k=2) is Obtains.SUM
    gen = torch.Generator().manual_seed(9)
    uploads = [(torch.randn(150, generator=gen) * 0.3,) for _ in range(4)]
    got = secagg(Protocol("secagg", "plain", {"model": variant}), uploads, colluders=2)
    assert got.gradients is not None
    want = (flat(uploads[0]) + flat(uploads[1])) / 2
    assert np.abs(flat(got.gradients) - want).max() < 4 * 2 * STEP
    assert np.abs(flat(got.gradients) - flat(uploads[0])).max() > 0.1  # not the victim alone


@pytest.mark.parametrize("variant", VARIANTS)
def test_red_team_secagg_colluding_clients_all_others_read_the_victim(variant):
    spec = get_mode("secagg")
    outcome = spec.outcome(Adversary.COLLUDING_CLIENTS, k=3, clients=4, params=SecAggParams(model=variant))
    assert outcome.obtains is Obtains.VICTIM
    gen = torch.Generator().manual_seed(9)
    uploads = [(torch.randn(150, generator=gen) * 0.3,) for _ in range(4)]
    got = secagg(Protocol("secagg", "plain", {"model": variant}), uploads, colluders=3)
    assert got.gradients is not None
    assert np.abs(flat(got.gradients) - flat(uploads[0])).max() < 4 * 4 * STEP


# -- the malicious aggregator: cells both variants share ------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_red_team_secagg_malicious_aggregator_trap_weights(variant):
    """One (trap) model to every client: the model check passes and the aggregator gets the whole round's sum for
    imprint to read (tests/inversion/test_imprint.py reads images out of such a sum), not an update alone."""
    assert _obtains(variant, Strategy.TRAP_WEIGHTS) is Obtains.SUM
    vectors = _vectors(4)
    params = _params(variant, model_check=True)
    got = attack(Strategy.TRAP_WEIGHTS, vectors, params, digests=dict.fromkeys(vectors, MODEL_B))
    assert not got.refusals and list(got.sums) == [(0, 1, 2, 3)]
    assert np.abs(got.sums[(0, 1, 2, 3)] - _mean(vectors, range(4))).max() < 4 * STEP
    _nothing_of_the_victim(got, vectors)


@pytest.mark.parametrize("variant", VARIANTS)
def test_red_team_secagg_malicious_aggregator_replay(variant):
    """The victim's upload counted twice and another's re-ordered, or the victim's upload of an earlier round in
    place of this one's: masks that do not cancel; what the aggregator unmasks is far from every update and sum."""
    assert _obtains(variant, Strategy.REPLAY) is Obtains.NOTHING
    vectors = _vectors(4)
    params = _params(variant)
    got = attack(Strategy.REPLAY, vectors, params)
    assert not got.refusals  # the clients cannot see it: it is the aggregator's own sum it spoils
    (spoiled,) = got.sums.values()
    assert np.abs(spoiled - _mean(vectors, range(4))).max() > 1000 * STEP
    _nothing_of_the_victim(got, vectors)
    later = _vectors(4, seed=5)
    again = attack(Strategy.REPLAY, later, params, earlier=got.uploads)
    for fedavg in again.sums.values():
        assert np.abs(fedavg - _mean(later, range(4))).max() > 1000 * STEP
    _nothing_of_the_victim(again, vectors)
    _nothing_of_the_victim(again, later)


# -- the malicious aggregator against the active model -------------------------------------------------------------


@pytest.mark.parametrize("how", ["empty", "inbox"])
def test_red_team_secagg_malicious_aggregator_withhold_neighbours(how):
    """N1 fails: a member list of the victim alone is below ``min_members``; the true list with the neighbours'
    shares withheld leaves the victim short of t - 1 of them. It refuses before uploading; nothing is read."""
    assert _obtains(ACTIVE, Strategy.WITHHOLD_NEIGHBOURS) is Obtains.NOTHING
    vectors = _vectors(3 if how == "empty" else 5)
    got = attack(Strategy.WITHHOLD_NEIGHBOURS, vectors, _params(ACTIVE), how=how)
    reason = "was told 1 members for a round of 3" if how == "empty" else "got shares from 0 of its 2 neighbours"
    assert reason in got.refusals[0]
    assert got.victim is None and not got.sums and not got.uploads


def test_red_team_secagg_malicious_aggregator_forge_neighbours():
    """Neighbours with keys the aggregator made: not signed by their roster keys, refused before a share leaves."""
    assert _obtains(ACTIVE, Strategy.FORGE_NEIGHBOURS) is Obtains.NOTHING
    vectors = _vectors(3)
    got = attack(Strategy.FORGE_NEIGHBOURS, vectors, _params(ACTIVE))
    assert "not signed by their keys in the roster" in got.refusals[0]
    assert got.victim is None and not got.sums and not got.uploads


@pytest.mark.parametrize(("n", "shares", "t"), [(3, 3, 2), (5, 3, 2), (7, 5, 3)])
def test_red_team_secagg_malicious_aggregator_dropout_lie(n, shares, t):
    """N2 fails: the survivor sets told differently gather no quorum of signatures but one at most; the victim's
    seed and its neighbours' mask keys never come out together, and every sum obtained covers more than half."""
    assert _obtains(ACTIVE, Strategy.DROPOUT_LIE) is Obtains.SUM
    vectors = _vectors(n)
    got = attack(Strategy.DROPOUT_LIE, vectors, _params(ACTIVE, shares, t))
    assert got.refusals and all(
        "matching survivor-set signatures" in r or "a round must keep" in r for r in got.refusals.values()
    )
    _nothing_of_the_victim(got, vectors)
    assert all(len(clients) > n / 2 for clients in got.sums)


def test_red_team_secagg_malicious_aggregator_split_graph():
    """N3 fails: a part of half the round or fewer refuses its member list, so the victim cannot be cut off; the
    majority part's sum is all that unmasks; lists that overlap are seen in the shares they carry."""
    assert _obtains(ACTIVE, Strategy.SPLIT_GRAPH) is Obtains.SUM
    vectors = _vectors(5)
    params = _params(ACTIVE, model_check=True)
    two_models = {i: MODEL_A if i < 3 else MODEL_B for i in vectors}
    alone = attack(Strategy.SPLIT_GRAPH, vectors, params, parts=[[0], [1, 2, 3, 4]], digests=two_models)
    assert "was told 1 members for a round of 5" in alone.refusals[0]
    _nothing_of_the_victim(alone, vectors)
    split = attack(Strategy.SPLIT_GRAPH, vectors, params, parts=[[0, 1, 2], [3, 4]], digests=two_models)
    assert set(split.refusals) == {3, 4} and all("2 members for a round of 5" in r for r in split.refusals.values())
    assert list(split.sums) == [(0, 1, 2)]  # more than half of the round, on the victim's model
    assert np.abs(split.sums[(0, 1, 2)] - _mean(vectors, range(3))).max() < 3 * STEP
    _nothing_of_the_victim(split, vectors)
    told = {0: [0, 1, 2], 1: [0, 1, 2], 2: [0, 2, 3], 3: [0, 2, 3]}  # client 0 in both lists
    overlap = attack(Strategy.SPLIT_GRAPH, _vectors(4), _params(ACTIVE), parts=[[0, 1], [2, 3]], told=told)
    assert any("were told different member lists" in r for r in overlap.refusals.values())
    assert overlap.victim is None and not overlap.sums


def test_red_team_secagg_malicious_aggregator_model_inconsistency():
    """Without the model check the dead model isolates the victim in the sum (the cell); with it, the victim's
    neighbours on the ring it derives hold another model and everyone concerned refuses, and the lies that hide
    the neighbours from the check (a member list of one, a part of its own) are refused."""
    assert _obtains(ACTIVE, Strategy.MODEL_INCONSISTENCY) is Obtains.VICTIM
    vectors = {i: v if i == 0 else np.zeros_like(v) for i, v in _vectors(5).items()}  # the dead model's updates
    digests = {i: MODEL_A if i == 0 else MODEL_B for i in vectors}
    got = attack(Strategy.MODEL_INCONSISTENCY, vectors, _params(ACTIVE), digests=digests)
    (fedavg,) = got.sums.values()
    assert not got.refusals and np.abs(fedavg * 5 - vectors[0]).max() < 5 * STEP  # the victim's update, alone
    checked = _params(ACTIVE, model_check=True)
    got = attack(Strategy.MODEL_INCONSISTENCY, vectors, checked, digests=digests)
    assert "different global models" in got.refusals[0]
    _nothing_of_the_victim(got, vectors)
    hidden = attack(Strategy.WITHHOLD_NEIGHBOURS, vectors, checked, digests=digests)
    assert "members for a round of 5" in hidden.refusals[0] and hidden.victim is None


# -- the malicious aggregator against the honest-but-curious variant: N1-N3 succeed (its row's truth) --------------


def test_red_team_secagg_honest_but_curious_malicious_aggregator_withhold_neighbours():
    """N1: told no neighbour, the victim lowers its threshold to 1 and hands its seed over as a 1-of-1 share."""
    assert _obtains(HBC, Strategy.WITHHOLD_NEIGHBOURS) is Obtains.VICTIM
    vectors = _vectors(3)
    got = attack(Strategy.WITHHOLD_NEIGHBOURS, vectors, _params(HBC))
    assert not got.refusals and _reads_victim(got, vectors)
    inbox = attack(Strategy.WITHHOLD_NEIGHBOURS, _vectors(5), _params(HBC), how="inbox")  # the one lie it refuses
    assert "got shares from 0 of its 2 neighbours" in inbox.refusals[0] and inbox.victim is None


def test_red_team_secagg_honest_but_curious_malicious_aggregator_forge_neighbours():
    assert _obtains(HBC, Strategy.FORGE_NEIGHBOURS) is Obtains.VICTIM
    vectors = _vectors(3)
    got = attack(Strategy.FORGE_NEIGHBOURS, vectors, _params(HBC))
    assert not got.refusals and _reads_victim(got, vectors)


@pytest.mark.parametrize(("n", "shares", "t"), [(3, 3, 2), (5, 3, 2), (7, 5, 3)])
def test_red_team_secagg_honest_but_curious_malicious_aggregator_dropout_lie(n, shares, t):
    """N2: each client's unmask request is consistent in itself, so none refuses, and the victim is read."""
    assert _obtains(HBC, Strategy.DROPOUT_LIE) is Obtains.VICTIM
    vectors = _vectors(n)
    got = attack(Strategy.DROPOUT_LIE, vectors, _params(HBC, shares, t))
    assert not got.refusals and _reads_victim(got, vectors)


def test_red_team_secagg_honest_but_curious_malicious_aggregator_split_graph():
    """N3: two models among 5 clients and the graph split along them: no client sees another model; with the
    victim in a part of its own, its update is that part's sum."""
    assert _obtains(HBC, Strategy.SPLIT_GRAPH) is Obtains.VICTIM
    vectors = _vectors(5)
    params = _params(HBC, model_check=True)
    two_models = {i: MODEL_A if i < 3 else MODEL_B for i in vectors}
    split = attack(Strategy.SPLIT_GRAPH, vectors, params, parts=[[0, 1, 2], [3, 4]], digests=two_models)
    assert not split.refusals and set(split.sums) == {(0, 1, 2), (3, 4)}
    ring = attack(Strategy.MODEL_INCONSISTENCY, vectors, params, digests=two_models)  # control: the honest ring
    assert sum("different global models" in r for r in ring.refusals.values()) >= 2
    dead = {i: MODEL_A if i == 0 else MODEL_B for i in vectors}  # the others on the dead model
    alone = attack(Strategy.SPLIT_GRAPH, vectors, params, parts=[[0], [1, 2, 3, 4]], digests=dead)
    assert not alone.refusals and _reads_victim(alone, vectors)


def test_red_team_secagg_honest_but_curious_malicious_aggregator_model_inconsistency():
    """The dead model isolates the victim; the model check sees it on the honest ring, not beside an empty
    neighbour list."""
    assert _obtains(HBC, Strategy.MODEL_INCONSISTENCY) is Obtains.VICTIM
    vectors = {i: v if i == 0 else np.zeros_like(v) for i, v in _vectors(5).items()}
    digests = {i: MODEL_A if i == 0 else MODEL_B for i in vectors}
    got = attack(Strategy.MODEL_INCONSISTENCY, vectors, _params(HBC), digests=digests)
    (fedavg,) = got.sums.values()
    assert not got.refusals and np.abs(fedavg * 5 - vectors[0]).max() < 5 * STEP
    checked = _params(HBC, model_check=True)
    seen = attack(Strategy.MODEL_INCONSISTENCY, vectors, checked, digests=digests)
    assert "different global models" in seen.refusals[0]
    hidden = attack(Strategy.WITHHOLD_NEIGHBOURS, vectors, checked, digests=digests)
    assert not hidden.refusals and _reads_victim(hidden, vectors)


# -- the observer ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_red_team_secagg_observer_reads_the_sum_in_the_clear(variant, tmp_path):
    """Every frame of a live round and its aggregate, as an observer of the wire without TLS reads them: the
    aggregate sent back is the FedAvg in the clear; no frame carries a client's update."""
    assert get_mode("secagg").outcome(Adversary.OBSERVER, params=SecAggParams(model=variant)).obtains is Obtains.SUM
    params, vectors = _params(variant), _vectors(3)
    key, identities = secrets.token_bytes(32), make_identities(3)
    door = listen(key, tls=None)

    def client(i: int) -> None:
        ch = connect(door.address, key, "aggregator", 30, transcript=tmp_path / f"to-{i}", tls=None)
        ch.send(Message(MessageKind.HELLO, {"client": i}))
        SecAggClientRound(i, ch, params, PhaseMeter(), identity=identities[i]).run(vectors[i], 10, {})
        try:
            while ch.recv().kind != MessageKind.AGGREGATE:
                pass
        except PeerClosedError:
            pass
        ch.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in vectors]
    for t in threads:
        t.start()
    channels = {}
    for i in vectors:
        ch = accept(door, "a client", 30, transcript=tmp_path / f"from-{i}")
        channels[int(ch.recv(MessageKind.HELLO).meta["client"])] = ch
    ctx = SimpleNamespace(config=SimpleNamespace(mode_params=params), suite=SimpleNamespace(runtime=SimpleNamespace()))
    ctx.suite.runtime.chunk_values = 64
    agg = SimpleNamespace(ctx=ctx, channels=channels, meter=PhaseMeter(), lose=lambda i: None)
    collected = secagg_round(agg, sorted(channels), PLAIN)  # the runtime's own aggregation, then its send
    send_aggregate(list(channels.values()), collected.total, MessageKind.AGGREGATE, {"round": 0}, PhaseMeter())
    for t in threads:
        t.join(30)
    for ch in channels.values():
        ch.close()
    door.close()
    frames = [m for path in sorted(tmp_path.iterdir()) for m in read_transcript(path)]
    chunks = {  # each client received a copy
        int(m.meta["offset"]): np.asarray(PLAIN.decrypt(PLAIN.deserialize(m.parts[0])), np.float64)
        for m in frames
        if m.kind == MessageKind.AGGREGATE_CHUNK
    }
    seen = np.concatenate([chunks[offset] for offset in sorted(chunks)])
    assert np.abs(seen - _mean(vectors, range(3))).max() < 3 * STEP + 1e-6  # the sum, read off the wire
    words = [np.frombuffer(m.parts[0], dtype=np.uint32) for m in frames if m.kind == MessageKind.SA_MASKED_CHUNK]
    assert words and all(float(np.std(w.astype(np.float64))) > 2**28 for w in words)  # uniform masked words
