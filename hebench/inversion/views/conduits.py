"""What an adversary obtains, through the mode's real protocol code: the victim's upload goes in, the view comes out.

A threat plan names a conduit where one exists, so that an attack's success is evidence about the protection
rather than about a model of it:

- ``he-key``: the victim encrypts its upload with its adapter and key set (host-he: the secret set every client
  gets from the key authority; decryptor-he: the public set), and the adversary decrypts that ciphertext with
  the key set it holds (a colluding client's, an engine's or the decryptor's: the epoch's one secret set; an
  observer's: the set it read off the wire);
- ``shares``: the round's additive shares on the 64-bit ring (:mod:`hebench.protections.sharing.ring_shares`);
  k colluding holders add theirs and decode;
- ``secagg``: a real SecAgg+ round (:mod:`hebench.protections.secagg.attacker_round`); colluding clients
  subtract their own updates; model inconsistency sends the non-victims a dead model
  (:mod:`hebench.inversion.views.inconsistency`),
  and with ``model_check`` the clients' check may abort the round: then nothing is obtained;
- ``red-team``: the live protocol with the adversary's own party in it, run by the view the mode's conduit rule
  names (:mod:`hebench.protections.red_team`): the lying aggregator hands each client the model the plan's
  strategy calls for (the attack's model; a dead one to the non-victims under model inconsistency; the trap model
  under trap weights), the clients (hebench's own, over the mode's link) train on what they were handed as the
  attack's victims do and upload, and the view returns what the adversary read. A client uploads its trained
  model; the adversary, which knows the model it handed out, turns that back into the pseudo-gradient the attack
  matches (``(handed - upload) / lr``).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from hebench.crypto import create_adapter, load_adapter
from hebench.errors import ParameterError
from hebench.protections import KeyHolders, get_mode
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.sharing import ring_shares
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.threats import Conduit


@dataclass(frozen=True)
class Conveyed:
    """What came out: the observed pseudo-gradients (None: nothing), the coordinates to match, and a note."""

    gradients: tuple[torch.Tensor, ...] | None
    masks: tuple[torch.Tensor, ...] | None = None
    detected: str | None = None  # a defence that stopped the attack, in words
    encrypted: np.ndarray | None = None  # a selective view: the coordinates the adversary did not read (flat)


@dataclass(frozen=True)
class Protocol:
    """The configuration behind a conduit (mode, adapter and params as the suite gave them; its transport; the
    red-team view its conduit rule names)."""

    mode: str
    adapter: str
    params: dict[str, Any]
    transport: str = "tcp"
    view: str | None = None

    @classmethod
    def of(cls, text: str) -> Protocol:
        return cls(**json.loads(text))

    def dumps(self) -> str:
        fields = {"mode": self.mode, "adapter": self.adapter, "params": self.params}
        if self.view is not None:  # the older conduits' plans keep the JSON they had
            fields |= {"transport": self.transport, "view": self.view}
        return json.dumps(fields, sort_keys=True)


def flat(tensors: tuple[torch.Tensor, ...]) -> np.ndarray:
    return torch.cat([t.reshape(-1) for t in tensors]).double().numpy()


def unflat(vector: np.ndarray, like: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    parts = torch.from_numpy(np.asarray(vector, dtype=np.float32)).split([t.numel() for t in like])
    return tuple(p.reshape(t.shape) for p, t in zip(parts, like, strict=True))


def he_key(protocol: Protocol, upload: tuple[torch.Tensor, ...]) -> Conveyed:
    """Encrypt the upload as the victim does and decrypt it with the epoch's secret set (what the adversary holds)."""
    authority = create_adapter(protocol.adapter, protocol.params)  # the key authority's epoch key set
    authority.keygen()
    secret, public = authority.export_keys(secret=True), authority.export_keys(secret=False)
    clients_hold_public_set = get_mode(protocol.mode).key_holders is KeyHolders.DECRYPTOR
    victim = load_adapter(public if clients_hold_public_set else secret)
    sent = victim.serialize(victim.encrypt(flat(upload).astype(np.float32)))
    adversary = load_adapter(secret)
    return Conveyed(unflat(adversary.decrypt(adversary.deserialize(sent)), upload))


def shares(protocol: Protocol, upload: tuple[torch.Tensor, ...], k: int) -> Conveyed:
    """The upload shared among K holders; ``k`` of them add theirs: all K give it back, fewer give uniform words."""
    params = SecretSharingParams.model_validate(protocol.params)
    encoded = ring_shares.encode(flat(upload), 1, params, np.random.default_rng(0))
    held = ring_shares.split(encoded, params.aggregators)[:k]
    if k < params.aggregators:
        return Conveyed(None)  # uniform and independent of the update (tests/inversion/test_threat_views.py)
    return Conveyed(unflat(ring_shares.decode(ring_shares.combine(held), 1, params), upload))


def secagg(
    protocol: Protocol,
    uploads: list[tuple[torch.Tensor, ...]],
    colluders: int = 0,
    digests: list[bytes] | None = None,
    isolate: bool = False,
    masks: tuple[torch.Tensor, ...] | None = None,
) -> Conveyed:
    """A real SecAgg+ round of ``uploads`` (the victim's first, equal weights), clients holding models of
    ``digests``. The last ``colluders`` clients subtract their own updates and the adversary gets the mean of
    the rest; with ``isolate`` (model inconsistency: the others sent dead updates) it divides the whole sum by
    the victim's weight instead."""
    from hebench.protections.secagg.attacker_round import secagg_round

    params = SecAggParams.model_validate(protocol.params)
    vectors = {i: flat(u) for i, u in enumerate(uploads)}
    outcome = secagg_round(vectors, dict.fromkeys(vectors, 1), params, dict(enumerate(digests or [])))
    if outcome.result is None or 0 not in outcome.result.survivors:  # aborted, or the victim refused and dropped
        refused = [outcome.refusals[i] for i in sorted(outcome.refusals)]
        more = f" (and {len(refused) - 1} more clients refused)" if len(refused) > 1 else ""
        missing = outcome.server_error or "secagg: the victim's update is not in the aggregate"
        return Conveyed(None, detected=(refused[0] + more) if refused else missing)
    result = outcome.result
    weights = result.weights  # over the survivors, summing to 1: result.average is sum(w_i v_i)
    honest = [0] if isolate else [i for i in result.survivors if i < len(uploads) - colluders]
    total = result.average.copy()
    for i in result.survivors:
        if i >= len(uploads) - colluders:
            total -= weights[i] * vectors[i]
    return Conveyed(unflat(total / sum(weights[i] for i in honest), uploads[0]), masks)


def model_digest(model: nn.Module) -> bytes:
    """sha256 of a model's parameters: the digest its holder seals to its neighbours (secagg model_check)."""
    return hashlib.sha256(flat(tuple(p.detach() for p in model.parameters())).astype("<f4").tobytes()).digest()


def red_team(
    plan: Any,
    protocol: Protocol,
    model: nn.Module,
    xs: list[torch.Tensor],
    ys: list[torch.Tensor],
    local: Any,
    seed: int,
    encrypted: np.ndarray | None = None,
) -> Conveyed:
    """The view of ``plan``'s adversary from a live round (the mode's red-team view, ``protocol.view``): the
    round's clients (``xs``, the victim's first) are handed ``model`` by the lying aggregator (the non-victims a
    dead one under model inconsistency), each trains on what it was handed as the attack's victims do (its
    gradient, or its E-step update; with the plan's DP) and uploads its trained model; ``encrypted``: a selective
    configuration's mask."""
    from hebench.fl.update import load_vector
    from hebench.inversion.views.inconsistency import dead_model
    from hebench.inversion.views.observation import client_uploads
    from hebench.protections.red_team import Target
    from hebench.protections.spec import resolve
    from hebench.protections.threats import Adversary, Strategy

    assert protocol.view is not None
    strategy = Strategy(plan.strategy) if plan.strategy else None
    nets = [model] * len(xs)
    if strategy is Strategy.MODEL_INCONSISTENCY:
        nets = [model] + [dead_model(model, xs[0])] * (len(xs) - 1)
    like = tuple(p.detach() for p in model.parameters())
    handed = tuple(flat(tuple(p.detach() for p in net.parameters())).astype(np.float32) for net in nets)
    lr = plan.local_lr

    def train(i: int, held: np.ndarray) -> np.ndarray:
        net = copy.deepcopy(nets[i])
        load_vector(net, held)
        (upload,) = client_uploads(net, xs[i : i + 1], ys[i : i + 1], local, plan.dp, lr, seed, i)
        return (held - lr * flat(upload)).astype(np.float32)  # its trained model: the held one, one step on

    target = Target(
        protocol.mode,
        protocol.adapter,
        protocol.params,
        protocol.transport,
        Adversary(plan.adversary),
        strategy,
        plan.k,
        handed,
        train,
        tuple(t.numel() for t in like),
        victims=plan.clients,
        encrypted=encrypted,
    )
    seen = resolve(protocol.view)(target)
    if seen.update is None:
        return Conveyed(None, detected=seen.detected)
    pseudo = (np.mean(handed[: plan.clients], axis=0).astype(np.float64) - seen.update) / lr
    unread = None if seen.visible is None else ~seen.visible
    return Conveyed(unflat(pseudo, like), detected=seen.detected, encrypted=unread)


def convey(
    plan: Any,
    model: nn.Module,
    xs: list[torch.Tensor],
    ys: list[torch.Tensor],
    local: Any,
    seed: int,
    encrypted: np.ndarray | None = None,
) -> Conveyed:
    """What ``plan``'s adversary obtains through its conduit: the round's clients (``xs``, the victim's first)
    upload on ``model`` (the dead model for the non-victims of a model-inconsistency plan); ``encrypted``: a
    selective configuration's mask (the red team's clients encrypt those coordinates)."""
    from hebench.inversion.views.inconsistency import dead_model, live_masks
    from hebench.inversion.views.observation import client_uploads, mean_upload

    protocol = Protocol.of(plan.protocol)
    if plan.conduit == Conduit.RED_TEAM:
        return red_team(plan, protocol, model, xs, ys, local, seed, encrypted)

    def uploads(net: nn.Module, first: int, last: int) -> list[tuple[torch.Tensor, ...]]:
        return client_uploads(net, xs[first:last], ys[first:last], local, plan.dp, plan.local_lr, seed, first)

    if plan.conduit == Conduit.HE_KEY:
        return he_key(protocol, mean_upload(uploads(model, 0, plan.clients)))
    if plan.conduit == Conduit.SHARES:
        return shares(protocol, mean_upload(uploads(model, 0, plan.clients)), plan.k)
    if plan.conduit == Conduit.SECAGG:
        same = [model_digest(model)] * len(xs)
        return secagg(protocol, uploads(model, 0, len(xs)), colluders=plan.k, digests=same)
    if plan.conduit == Conduit.SECAGG_INCONSISTENCY:
        dead = dead_model(model, xs[0])
        sent = [*uploads(model, 0, 1), *uploads(dead, 1, len(xs))]
        digests = [model_digest(model)] + [model_digest(dead)] * (len(xs) - 1)
        return secagg(protocol, sent, digests=digests, isolate=True, masks=live_masks(model))
    raise ParameterError(f"unknown conduit '{plan.conduit}'", f"use one of {', '.join(CONDUITS)}")


CONDUITS = tuple(Conduit)
