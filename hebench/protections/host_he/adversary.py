"""host-he's red team: the lying aggregator of the direct link (:mod:`hebench.protections.raw.adversary`) against
clients that encrypt under the epoch's secret set, alone or with clients that hand it their key sets.

Alone (honest-but-curious or lying about the models it hands out) it holds the public set: it can hand out any model,
encrypted under it, but reads no upload (the adapter refuses to decrypt without a secret key); of a selective upload
it reads the plaintext coordinates. With one colluding client (or a key holder: here, every client) it decrypts the
victim's real ciphertext with the key set that client received from the key authority.
"""

from __future__ import annotations

from hebench.protections.raw.adversary import clients_of, configuration, in_model_units, lying, victims_mean
from hebench.protections.raw.live_round import run_round
from hebench.protections.red_team import Seen, Target
from hebench.protections.threats import Adversary

KEY_READERS = (Adversary.COLLUDING_CLIENTS, Adversary.KEY_HOLDER)


def red_team_view(target: Target) -> Seen:
    """What ``target``'s adversary (the aggregator, honest or lying, alone or with a client's key set) reads in a
    live host-he round. (The observer's view is :func:`hebench.protections.tls.adversary.observer_view`.)"""
    # a key holder in host-he is a client: the round's last one hands over its key set, as a colluder would
    colluder = target.clients - 1 if target.adversary in KEY_READERS else None
    live = run_round(
        configuration(target),
        target.clients,
        lying(target),
        clients_of(target),
        colluders=() if colluder is None else (colluder,),
    )
    if live.served is None:
        return Seen(None, detected=live.server_error or next(iter(live.refusals.values()), None))
    played = live.served
    keys = None
    if colluder is not None:
        keys = played.liar.aggregation.key_set(colluder, played.liar.epoch)
    reads = [
        in_model_units(
            played.liar.read(played.uploads[i], target.encrypted, keys),
            live.config,
            live.held_at(i, played.round, target.models[0]),
            target.sizes,
        )
        for i in range(target.victims)
    ]
    if reads and reads[0].values is None and target.encrypted is None:
        return Seen(None, notes=(*played.notes, "every upload is ciphertext under a key the aggregator does not hold"))
    return victims_mean(reads, played.notes)
