"""A secagg client whose connection closes (its process killed) at each stage of a SecAgg+ round, on real channels
in threads: it is a dropout of the stage it was lost in, and the sum is the FedAvg of the survivors (or the round
is Unrecoverable: skipped, the run goes on). No processes: the stages are driven as in
tests/protections/secagg/test_secagg.py."""

from __future__ import annotations

import re
import secrets
import threading

import numpy as np
import pytest

from hebench.fl.meter import PhaseMeter
from hebench.fl.roster import make_identities
from hebench.net.transport import Channel, Message, accept, connect, listen
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.members import MemberList
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import SecAggResult, Unrecoverable, collect_secagg

CHUNK = 100  # values per masked chunk: a 500-value update streams in 5


class Killed(SecAggClientRound):
    """A client that closes its channel (as a killed process does) at ``stage``, having read all it was sent."""

    stage = ""

    def run(self, vector: np.ndarray, samples: int, meta: dict) -> None:
        if self.stage == "before_keys":
            return self.die()
        self.advertise_keys(samples, meta)
        if self.stage == "before_shares":  # told its neighbours, never sends its shares
            self.channel.recv("sa_neighbours")
            return self.die()
        self.share_keys()
        if self.stage == "before_upload":
            return self.die()
        if self.stage == "mid_upload":
            self.channel = CutAfterFirstChunk(self.channel)  # type: ignore[assignment]
            return self.masked_upload(vector)
        self.masked_upload(vector)
        if self.active and self.stage == "during_consistency":  # asked to sign the survivors, never signs
            self.channel.recv("sa_survivors")
            return self.die()
        if self.active:
            self._sign_survivors()
        self.channel.recv("sa_unmask")  # "during_unmask": asked for its shares, never reveals them
        return self.die()

    def die(self) -> None:
        self.channel.close()


class CutAfterFirstChunk:
    """A channel that closes after the first chunk of the masked upload leaves."""

    def __init__(self, channel: Channel) -> None:
        self.inner = channel

    def send(self, msg: Message) -> int:
        sent = self.inner.send(msg)
        if msg.kind == "sa_masked_chunk":
            self.inner.close()
            raise SystemExit
        return sent


def run_round(
    params: SecAggParams, vectors: dict[int, np.ndarray], samples: dict[int, int], killed: dict[int, str], **kw
) -> SecAggResult:
    key = secrets.token_bytes(32)
    door = listen(key)
    errors: list[BaseException] = []
    identities = make_identities(len(vectors))  # the trusted set-up (the active model's signatures)

    def client(i: int) -> None:
        try:
            ch = connect(door.address, key, "aggregator", 30)
            ch.send(Message("hello", {"client": i}))
            kind = type("K", (Killed,), {"stage": killed[i]}) if i in killed else SecAggClientRound
            kind(i, ch, params, PhaseMeter(), chunk_values=CHUNK, identity=identities[i]).run(
                vectors[i], samples[i], {}
            )
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
    try:
        return collect_secagg(channels, params, PhaseMeter(), CHUNK, **kw)
    finally:
        for ch in channels.values():
            ch.close()  # a survivor still waiting (an Unrecoverable round) ends
        for t in threads:
            t.join(30)
        door.close()
        assert all(isinstance(e, Exception) for e in errors)


def inputs(n: int = 5, size: int = 500) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    rng = np.random.default_rng(11)
    return {i: rng.normal(0, 1, size).astype(np.float32) for i in range(n)}, {i: 10 + 3 * i for i in range(n)}


def check_fedavg(result: SecAggResult, params: SecAggParams, vectors, samples, survivors: list[int]) -> None:
    assert list(result.survivors) == survivors
    weight = sum(samples[i] for i in survivors)
    want = sum(samples[i] / weight * vectors[i].astype(np.float64) for i in survivors)
    step = 2 * params.clipping_range / params.quantization_range
    covered = weight / sum(samples[i] for i in result.weights.keys() | set(result.dropped) | result.left.keys())
    assert np.abs(result.average - want).max() < len(survivors) * step / covered
    assert sum(result.weights.values()) == pytest.approx(1.0)


PARAMS = SecAggParams(num_shares=5, reconstruction_threshold=3)  # 4 neighbours each among 5
HBC = "honest-but-curious"


@pytest.mark.parametrize(
    ("stage", "phase_dropped"),
    [("before_keys", False), ("before_shares", False), ("before_upload", True)],
)
def test_a_client_lost_before_its_masked_upload_is_left_out_and_the_sum_is_the_survivors(stage, phase_dropped):
    vectors, samples = inputs()
    lost: list[int] = []
    result = run_round(PARAMS, vectors, samples, {2: stage}, on_lost=lost.append)
    check_fedavg(result, PARAMS, vectors, samples, [0, 1, 3, 4])
    assert lost == [2] and result.left == {2: "lost"}
    # after its shares, its pairwise masks are in its neighbours' uploads (rebuilt from its key's shares);
    # before them, nobody masked with it: it is out of the graph altogether
    assert result.dropped == ((2,) if phase_dropped else ())


def test_two_clients_lost_before_sharing_and_one_after_leave_the_correct_sum():
    vectors, samples = inputs(7)
    params = SecAggParams(num_shares=7, reconstruction_threshold=4)  # everyone's neighbour; 4 of 7 shares rebuild
    result = run_round(params, vectors, samples, {1: "before_shares", 4: "before_shares", 3: "before_upload"})
    check_fedavg(result, params, vectors, samples, [0, 2, 5, 6])
    assert result.dropped == (3,) and result.left == {1: "lost", 3: "lost", 4: "lost"}


@pytest.mark.parametrize("stage", ["during_consistency", "during_unmask"])
def test_a_client_lost_during_unmask_counts_and_the_others_shares_recover_its_seed(stage):
    vectors, samples = inputs()
    result = run_round(PARAMS, vectors, samples, {2: stage})
    check_fedavg(result, PARAMS, vectors, samples, [0, 1, 2, 3, 4])  # its masked input is in the sum
    assert result.dropped == () and result.left == {}


@pytest.mark.parametrize("model", [HBC, "active"])
def test_losses_during_unmask_below_the_threshold_make_the_round_unrecoverable(model):
    vectors, samples = inputs(3)
    params = SecAggParams(num_shares=3, reconstruction_threshold=2, model=model)  # 2 neighbours: a seed needs 2 of 3
    with pytest.raises(Unrecoverable, match="came back") as err:
        run_round(params, vectors, samples, {1: "during_unmask", 2: "during_unmask"})
    assert err.value.left == {}  # both inputs arrived; their reveals did not


def test_on_a_thin_ring_the_unrecoverable_round_names_a_secret_that_ring_leaves_short(monkeypatch):
    """Active model, 2 neighbours among 5: client 4 lost after sharing its keys, client 3 after its masked upload
    (before revealing). The ring comes from the round's freshly signed member list, so it differs from run to run;
    the rings every party derived are read off here, and the round's reason must name a secret that this ring leaves
    short, with the number of its shares that really came back (tests/faults/test_secagg_dropouts.py's thin round)."""
    rings: list[dict[int, list[int]]] = []
    derive = MemberList.ring

    def spy(self: MemberList, params: SecAggParams) -> dict[int, list[int]]:
        rings.append(derive(self, params))
        return rings[-1]

    monkeypatch.setattr(MemberList, "ring", spy)
    vectors, samples = inputs()
    params = SecAggParams(num_shares=3, reconstruction_threshold=2)
    with pytest.raises(Unrecoverable) as err:
        run_round(params, vectors, samples, {4: "before_upload", 3: "during_unmask"})
    ring = rings[0]
    assert len(rings) >= 6 and all(r == ring for r in rings)  # the aggregator and the 5 clients: one ring
    revealed = {0, 1, 2}  # 3's seed is needed (its upload is in), 4's mask key too; neither of them reveals
    short = {owner: len(({owner} | set(ring[owner])) & revealed) for owner in range(5)}
    short = {owner: back for owner, back in short.items() if back < 2}
    assert short  # on any ring of 5 with 3 and 4 gone, some secret is held by 1 revealer only
    got = re.fullmatch(r"secagg: only (\d) shares of client (\d)'s secret came back \(threshold 2\)", err.value.problem)
    assert got is not None, err.value.problem
    assert short.get(int(got[2])) == int(got[1]), (ring, short, err.value.problem)
    assert err.value.left == {4: "lost"}  # 3's input arrived; 4's did not


def test_losses_in_the_consistency_round_leaving_half_the_round_or_fewer_make_it_unrecoverable():
    """Active model: with 2 of 3 lost before signing, the one signer is short of the quorum: nobody reveals."""
    vectors, samples = inputs(3)
    params = SecAggParams(num_shares=3, reconstruction_threshold=2)
    with pytest.raises(Unrecoverable, match="1 survivors signed the survivor set, fewer than the 2") as err:
        run_round(params, vectors, samples, {1: "during_consistency", 2: "during_consistency"})
    assert err.value.left == {}  # their inputs arrived, as of clients lost in the unmask


def test_a_client_lost_in_the_middle_of_its_masked_upload_spoils_the_round():
    vectors, samples = inputs()
    with pytest.raises(Unrecoverable, match="middle of its masked upload") as err:
        run_round(PARAMS, vectors, samples, {2: "mid_upload"})
    assert err.value.left == {2: "lost"}
