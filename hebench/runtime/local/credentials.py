"""A configuration's doors on the local runtime: which party may use which door, and each party's own keys.

The runtime is the trusted set-up: it alone holds the run's door secret (:class:`~hebench.net.door_keys.DoorKeyIssuer`)
and hands every party its own key at each door its role may use, and every door keeper the keys of the parties
its door admits. The doors and who may come in:

- the aggregator's door: every client (in offload, each client's engine as its proxy: the key its host hands it,
  or under TLS its own certificate), and a helper that dials in (decryptor-he's decryptor);
- the key authority's doors: the aggregator at the public door; the clients at the key holders' door (host-he,
  decryptor-he); the decryptor at its own;
- share holder ``aggregator-k``'s door: every client, and nobody else (not aggregator 0: N4);
- offload engine ``i``'s door: client ``i`` and the key authority, nobody else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hebench.config import Configuration
from hebench.fl.party import (
    AGGREGATOR_DOOR,
    DECRYPTOR_DOOR,
    KEY_AUTHORITY,
    KEY_HOLDERS_DOOR,
    PUBLIC_DOOR,
    Credentials,
    client_party,
    engine_door,
)
from hebench.net.door_keys import DoorKeyIssuer, DoorKeys
from hebench.protections import KeyHolders
from hebench.runtime.local.party_names import helper_names


@dataclass(frozen=True)
class Door:
    """One door: the party that keeps it, the parties it admits, and aliases (identity -> party whose key it
    proves: an offload engine's certificate at the aggregator's door stands for its host)."""

    keeper: str
    parties: tuple[str, ...]
    aliases: dict[str, str] = field(default_factory=dict)


def run_doors(config: Configuration, clients: int) -> dict[str, Door]:
    """Every door of one configuration's run, by name."""
    spec = config.spec
    everyone = tuple(client_party(i) for i in range(clients))
    helpers = helper_names(config)
    knocking = {
        door: tuple(h for h in helpers if door in spec.helper_doors) for door in (AGGREGATOR_DOOR, DECRYPTOR_DOOR)
    }
    engines = {f"engine-{i}": client_party(i) for i in range(clients)} if spec.needs_engines else {}
    doors = {
        AGGREGATOR_DOOR: Door("aggregator", (*everyone, *knocking[AGGREGATOR_DOOR]), engines),
        PUBLIC_DOOR: Door(KEY_AUTHORITY, ("aggregator",)),
    }
    if spec.key_holders in (KeyHolders.CLIENTS, KeyHolders.DECRYPTOR):
        doors[KEY_HOLDERS_DOOR] = Door(KEY_AUTHORITY, everyone)
    if knocking[DECRYPTOR_DOOR]:
        doors[DECRYPTOR_DOOR] = Door(KEY_AUTHORITY, knocking[DECRYPTOR_DOOR])
    if not spec.helper_dials:
        doors.update({helper: Door(helper, everyone) for helper in helpers})  # share holders: their own doors
    if spec.needs_engines:
        doors.update({engine_door(i): Door(f"engine-{i}", (client_party(i), KEY_AUTHORITY)) for i in range(clients)})
    return doors


class RunCredentials:
    """One configuration's door keys, from a fresh secret: :meth:`of` a party, :meth:`door` for a door's keeper."""

    def __init__(self, config: Configuration, clients: int, issuer: DoorKeyIssuer | None = None) -> None:
        self.doors = run_doors(config, clients)
        self._issuer = issuer or DoorKeyIssuer()

    def door(self, name: str) -> DoorKeys:
        door = self.doors[name]
        return self._issuer.door(name, door.parties, door.aliases)

    def of(self, party: str) -> Credentials:
        """``party``'s credentials: its own key at each door that admits it, the keys of each door it keeps."""
        knocks = {name: self._issuer.key(name, party) for name, door in self.doors.items() if party in door.parties}
        kept = {name: self.door(name) for name, door in self.doors.items() if door.keeper == party}
        return Credentials(party=party, knocks=knocks, doors=kept)
