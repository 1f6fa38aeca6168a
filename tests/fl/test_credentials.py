"""Identity at the doors: every party holds its own key per door it may use, and a door knows a peer by the key it
proves (or its certificate), never by what it says; a key of one role opens no other role's door."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import queue
import threading

import pytest

from hebench.config import parse_suite
from hebench.errors import PartyError
from hebench.fl.key_authority import run_key_authority
from hebench.fl.party import (
    AGGREGATOR_DOOR,
    KEY_AUTHORITY,
    KEY_HOLDERS_DOOR,
    PUBLIC_DOOR,
    Credentials,
    PartyContext,
    engine_door,
)
from hebench.net.certs import make_party_certificates, party_tls
from hebench.net.transport import Door, Message, accept, connect
from hebench.protections import get_mode, mode_names
from hebench.results.records import SecurityNoteRecord
from hebench.runtime.local.credentials import RunCredentials
from tests.conftest import INSTALLED

SUITE = {
    "name": "creds",
    "data": {"dataset": "digits", "clients": 1},
    "configurations": [{"mode": "host-he", "adapter": "tenseal-ckks"}],
    "measure": {"timeout_s": 20},
}


def _config(mode: str):
    config: dict = {"mode": mode}
    if mode == "secret-sharing":
        config["params"] = {"aggregators": 3}
    elif not get_mode(mode).plain_adapter:
        config["adapter"] = "tenseal-ckks"
    return parse_suite({"name": "c", "data": {"dataset": "digits", "clients": 3}, "configurations": [config]})


def _context(credentials: Credentials) -> PartyContext:
    suite = parse_suite(dict(SUITE))
    return PartyContext(suite, suite.configurations[0], None, credentials, "run", 0, (1, 28, 28), 10)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", mode_names())
def test_each_party_holds_its_own_key_at_only_the_doors_its_role_may_use(mode):
    suite = _config(mode)
    creds = RunCredentials(suite.configurations[0], 3)
    parties = {p for door in creds.doors.values() for p in door.parties} | {"aggregator", KEY_AUTHORITY}
    keys = {}
    for party in parties:
        mine = creds.of(party)
        assert set(mine.knocks) == {name for name, door in creds.doors.items() if party in door.parties}
        for door, key in mine.knocks.items():
            assert creds.door(door).key_of(party) == key  # the door knows it by that key
            keys[(door, party)] = key
    assert len(set(keys.values())) == len(keys)  # no key stands for two parties, nor for one party at two doors
    assert set(creds.of("aggregator").knocks) == {PUBLIC_DOOR}  # the aggregator opens the public door only
    assert AGGREGATOR_DOOR in creds.of("client-0").knocks and PUBLIC_DOOR not in creds.of("client-0").knocks
    for k in (1, 2) if mode == "secret-sharing" else ():  # a share holder's door: the clients, not aggregator 0
        assert set(creds.doors[f"aggregator-{k}"].parties) == {"client-0", "client-1", "client-2"}
    if mode == "offload":  # engine i: its host and the key authority
        assert set(creds.doors[engine_door(1)].parties) == {"client-1", KEY_AUTHORITY}


@pytest.mark.parametrize("tls", [False, True])
def test_a_door_knows_a_client_by_its_key_not_by_the_name_it_gives(tmp_path, tls):
    creds = RunCredentials(_config("raw").configurations[0], 3)
    folder = tmp_path / "parties"
    make_party_certificates(folder, ("aggregator", "client-0", "client-1"), ("aggregator",))

    def files(party: str):
        return party_tls(folder, party) if tls else None

    door = Door(creds.door(AGGREGATOR_DOOR), tls=files("aggregator"))
    try:
        one = creds.of("client-1").key(AGGREGATOR_DOOR)
        # client 1's own key, with client 1's certificate: it comes in as client 1
        connect(door.address, one, "aggregator", 10, tls=files("client-1"), server="aggregator", party="client-1")
        assert accept(door, "a client", 10).party == "client-1"
        # client 1's key, naming client 0 (or, under TLS, with client 0's certificate): refused
        with pytest.raises(PartyError):
            connect(door.address, one, "aggregator", 5, tls=files("client-0"), server="aggregator", party="client-0")
        with pytest.raises(PartyError, match="no party connected"):
            door.next(0.5)
        assert "client-0" in door.refused[-1]
    finally:
        door.close()


def test_a_key_of_one_door_opens_no_other_door():
    creds = RunCredentials(_config("host-he").configurations[0], 2)
    door = Door(creds.door(KEY_HOLDERS_DOOR))
    try:
        for party, key in [
            ("aggregator", creds.of("aggregator").key(PUBLIC_DOOR)),  # the aggregator's own key, elsewhere
            ("client-0", creds.of("client-0").key(AGGREGATOR_DOOR)),  # a client's key at another door
            ("client-0", creds.door(AGGREGATOR_DOOR).key_of("client-0")),  # what the aggregator's door keeps
        ]:
            with pytest.raises(PartyError, match="did not authenticate"):
                connect(door.address, key, "key authority", 5, party=party)  # type: ignore[arg-type]
        with pytest.raises(PartyError, match="no party connected"):
            door.next(0.5)
    finally:
        door.close()


@pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")
def test_the_aggregators_credential_does_not_open_the_key_holders_door():
    # Arrange: a key authority for one host-he client, in a thread
    suite = parse_suite(dict(SUITE))
    creds = RunCredentials(suite.configurations[0], 1)
    ctx = _context(creds.of(KEY_AUTHORITY))
    ours, theirs = mp.Pipe()
    records: queue.Queue = queue.Queue()
    authority = threading.Thread(target=run_key_authority, args=(ctx, theirs, records), daemon=True)
    authority.start()
    doors = ours.recv()
    ours.send(([], None))
    aggregator_key = creds.of("aggregator").key(PUBLIC_DOOR)

    # Act: a curious aggregator knocks on the key holders' door with the only key it has, as itself and as client 0
    for party in ("aggregator", "client-0"):
        with pytest.raises(PartyError, match="did not authenticate"):
            connect(doors["key_holder"], aggregator_key, "key authority", 10, party=party)
    # ... then the real client and the aggregator go through their own doors
    client_key = creds.of("client-0").key(KEY_HOLDERS_DOOR)
    client = connect(doors["key_holder"], client_key, "key authority", 20, party="client-0")
    client.send(Message("hello", {"role": "client", "client": 0}))
    aggregator = connect(doors["public"], aggregator_key, "key authority", 20, party="aggregator")
    aggregator.send(Message("hello", {"role": "aggregator"}))
    aggregator.send(Message("epoch", {"epoch": 0}))
    public = aggregator.recv("keys")
    secret = client.recv("keys")
    aggregator.send(Message("done"))
    authority.join(timeout=20)

    # Assert: the refusals are reported; the aggregator got the public set, the client the secret set
    notes = [r for r in list(records.queue) if isinstance(r, SecurityNoteRecord)]
    assert notes and all("key holders'" in n.door and n.config == "host-he/tenseal-ckks" for n in notes)
    assert sum(n.count for n in notes) == 2
    assert public.meta["secret"] is False and secret.meta["secret"] is True
    assert not authority.is_alive()


def test_a_party_context_without_credentials_holds_none():
    ctx = dataclasses.replace(_context(RunCredentials(_config("raw").configurations[0], 1).of("client-0")))
    bare = dataclasses.replace(ctx, credentials=Credentials())
    assert bare.credentials.knocks == {} and bare.credentials.doors == {} and bare.credentials.hub is None
    with pytest.raises(PartyError, match="holds no key for the aggregator door"):
        bare.credentials.key(AGGREGATOR_DOOR)
