"""Roles are bound to credentials: the key authority admits a party by the door's credential, not by its word."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import queue
import threading

import pytest

from hebench.config import parse_suite
from hebench.errors import PartyError
from hebench.fl.key_authority import run_key_authority
from hebench.fl.party import Credentials, PartyContext
from hebench.net.transport import Message, connect
from hebench.results.records import SecurityNoteRecord
from hebench.runtime.local.processes import ROLE_DOORS
from tests.conftest import INSTALLED

SUITE = {
    "name": "creds",
    "data": {"dataset": "digits", "clients": 1},
    "configurations": [{"mode": "host-he", "adapter": "tenseal-ckks"}],
    "measure": {"timeout_s": 20},
}


def _context(credentials: Credentials) -> PartyContext:
    suite = parse_suite(dict(SUITE))
    return PartyContext(suite, suite.configurations[0], None, credentials, "run", 0, (1, 28, 28), 10)  # type: ignore[arg-type]


def test_each_role_gets_only_its_own_doors():
    creds = Credentials.generate()
    aggregator = creds.only(*ROLE_DOORS["aggregator"])
    assert aggregator.key_holder is None and aggregator.public == creds.public
    for role, doors in ROLE_DOORS.items():
        if role not in ("key_authority", "aggregator"):  # clients of every mode
            assert "public" not in doors, f"{role} must not hold the aggregator's door to the key authority"


@pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")
def test_the_aggregators_credential_does_not_open_the_key_holders_door():
    # Arrange: a key authority for one host-he client, in a thread
    creds = Credentials.generate()
    ctx = _context(creds.only(*ROLE_DOORS["key_authority"]))
    ours, theirs = mp.Pipe()
    records: queue.Queue = queue.Queue()
    authority = threading.Thread(target=run_key_authority, args=(ctx, theirs, records), daemon=True)
    authority.start()
    doors = ours.recv()
    ours.send(([], None))

    # Act: a curious aggregator knocks on the key holders' door with the only credential it has
    with pytest.raises(PartyError, match="did not authenticate"):
        connect(doors["key_holder"], creds.public, "key authority", 10)  # type: ignore[arg-type]
    # ... then the real client and the aggregator go through their own doors
    client = connect(doors["key_holder"], creds.key_holder, "key authority", 20)  # type: ignore[arg-type]
    client.send(Message("hello", {"role": "client", "client": 0}))
    aggregator = connect(doors["public"], creds.public, "key authority", 20)  # type: ignore[arg-type]
    aggregator.send(Message("hello", {"role": "aggregator"}))
    aggregator.send(Message("epoch", {"epoch": 0}))
    public = aggregator.recv("keys")
    secret = client.recv("keys")
    aggregator.send(Message("done"))
    authority.join(timeout=20)

    # Assert: the refusal is reported; the aggregator got the public set, the client the secret set
    notes = [r for r in list(records.queue) if isinstance(r, SecurityNoteRecord)]
    assert len(notes) == 1 and "key holders'" in notes[0].door and notes[0].config == "host-he/tenseal-ckks"
    assert public.meta["secret"] is False and secret.meta["secret"] is True
    assert not authority.is_alive()


def test_a_party_context_without_credentials_holds_none():
    ctx = dataclasses.replace(_context(Credentials.generate()), credentials=Credentials())
    assert all(getattr(ctx.credentials, f.name) is None for f in dataclasses.fields(Credentials))
