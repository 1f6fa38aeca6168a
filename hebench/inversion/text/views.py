"""The observation each protection hands each adversary, for a language model's clients.

A client trains the global model on its token blocks and uploads, as a hebench run does, its trained parameters
(``upload="weights"``: FedAvg; the adversary subtracts the model it sent and divides by the learning rate, so an
update of E SGD steps reads as the sum of E gradients), or the gradient of one batch (``upload="gradient"``:
FedSGD, DAGER's and DLG's threat model). What travels goes through the protection's own code where one exists:

- ``raw``: the upload as sent.
- ``encrypted``: what an honest aggregator holds under full HE (host-HE, offload, decryptor-HE): no update.
- ``selective``: the plaintext coordinates only; the adversary knows the mask (agreed in the clear) and reads no
  encrypted coordinate (their values are zeroed here, and :class:`TextObservation` marks them hidden).
- ``dp``: client-level DP as the client applies it (:func:`hebench.protections.dp.mechanism.privatize_update`:
  the trained-minus-global update clipped, Gaussian noise added, secret to the client). A DP configuration of any
  mode: every view that carries an update carries the privatized one (``dp=``: each client's upload is its
  global model plus its clipped, noised update, as :meth:`hebench.fl.local_model.LocalModel.train` sends it),
  through the mode's protocol as without DP; a view that carries nothing (the encrypted aggregator's, one share
  holder's) still carries nothing.
- ``secagg-sum``: a real SecAgg+ round of k clients' uploads (:func:`hebench.inversion.views.conduits.secagg`):
  the adversary gets their mean, quantised as the protocol quantises.
- single-update threat models, each the victim's upload alone through the protocol: ``host-he-colluder`` (a
  colluding client's key set opens the victim's real CKKS ciphertext), ``shares-all`` (all K share holders add their
  shares), ``model-inconsistency`` (secagg: the others get a dead model whose update is zero; their uploads still
  go through the round).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hebench.errors import ParameterError
from hebench.inversion.text.observation import TextObservation
from hebench.models.shared import shared_tensors
from hebench.protections.dp.mechanism import privatize_update
from hebench.protections.dp.noise import NoiseSource, SecretNoise
from hebench.protections.dp.spec import DPSpec

Upload = Literal["weights", "gradient"]
Named = dict[str, torch.Tensor]


@dataclass(frozen=True)
class TextTraining:
    """How a client trains (public protocol settings): E SGD steps of ``batch_size`` blocks (None: all its blocks)."""

    steps: int = 1
    batch_size: int | None = None
    lr: float = 0.01
    upload: Upload = "weights"
    seed: int = 0
    optimiser: str = "sgd"  # sgd or adamw (hebench's language runs): Adam's per-coordinate scaling bends the span

    def batch(self, blocks: int) -> int:
        return self.batch_size or blocks


@dataclass(frozen=True)
class TextClient:
    """One client's text: token blocks (n, L), and class labels for an encoder (None: next-token loss)."""

    blocks: torch.Tensor
    labels: torch.Tensor | None = None


def text_loss(model: nn.Module, blocks: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
    """The client's loss: next-token cross-entropy (decoder), or the class cross-entropy (hebench's BERT)."""
    if labels is None:
        from hebench.models.language.next_token import block_loss

        return block_loss(model, blocks)
    return F.cross_entropy(model(blocks.reshape(len(blocks), 1, 1, -1)), labels)


def _batches(n: int, training: TextTraining) -> list[torch.Tensor]:
    from hebench.models.language.local_steps import batch_order

    return batch_order(n, training.steps, training.batch(n), training.seed)


def client_upload(
    model: nn.Module,
    client: TextClient,
    training: TextTraining,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> Named:
    """What the client sends: its trained parameters after E SGD steps, or the gradient of its first batch; with
    client-level ``dp`` (a weights upload), the global model plus the trained-minus-global update clipped and
    noised (``noise``: secret to the client unless a test passes a seeded source)."""
    if dp is not None:
        return _privatized(model, client_upload(model, client, _weights(training, dp)), dp, noise or SecretNoise())
    if training.upload == "gradient":
        idx = _batches(len(client.blocks), replace(training, steps=1))[0]
        labels = None if client.labels is None else client.labels[idx]
        params = shared_tensors(model)
        grads = torch.autograd.grad(text_loss(model, client.blocks[idx], labels), [p for _, p in params])
        return {name: g.detach().clone() for (name, _), g in zip(params, grads, strict=True)}
    twin = copy.deepcopy(model)
    twin.train()
    trained = dict(shared_tensors(twin))
    from hebench.models.language.local_steps import optimiser

    opt = optimiser(twin, training.optimiser, training.lr)
    for idx in _batches(len(client.blocks), training):
        opt.zero_grad(set_to_none=True)
        labels = None if client.labels is None else client.labels[idx]
        text_loss(twin, client.blocks[idx], labels).backward()
        opt.step()
    return {name: p.detach().clone() for name, p in trained.items()}


def _weights(training: TextTraining, dp: DPSpec | None) -> TextTraining:
    """Client-level DP privatizes a trained-minus-global update: its client uploads weights (FedAvg)."""
    if dp is None:
        return training
    if dp.level != "client":
        raise ParameterError("the text views apply client-level DP", "use dp level: client")
    return replace(training, upload="weights")


def _privatized(model: nn.Module, received: Named, dp: DPSpec, noise: NoiseSource) -> Named:
    """``start + privatize_update(trained - start)`` in float32 over the flat update, as the client computes it."""
    names = list(received)
    start = dict(shared_tensors(model))
    begin = torch.cat([start[n].detach().float().reshape(-1) for n in names]).numpy()
    trained = torch.cat([received[n].detach().float().reshape(-1) for n in names]).numpy()
    sent = begin + privatize_update(trained - begin, dp, noise)
    parts = torch.from_numpy(np.asarray(sent, dtype=np.float32)).split([received[n].numel() for n in names])
    return {n: p.reshape(received[n].shape) for n, p in zip(names, parts, strict=True)}


def _dp_label(view: str, dp: DPSpec | None) -> str:
    return view if dp is None else f"dp-z{dp.noise_multiplier:g}-c{dp.clip:g}+{view}"


def _dp_notes(dp: DPSpec | None, clients: int = 1) -> tuple[str, ...]:
    if dp is None:
        return ()
    who = "its client" if clients == 1 else f"each of its {clients} clients"
    return (f"client-level DP: every upload clipped to {dp.clip:g} and noised, z={dp.noise_multiplier:g}, by {who}",)


def pseudo_gradient(model: nn.Module, received: Named, training: TextTraining) -> Named:
    """The adversary's reading of an upload: the gradient as sent, or ``(w_0 - w_E) / lr`` (float64)."""
    if training.upload == "gradient":
        return {n: t.detach().to(torch.float64) for n, t in received.items()}
    start = dict(shared_tensors(model))
    return {n: (start[n].detach().double() - t.detach().double()) / training.lr for n, t in received.items()}


def _observation(
    model: nn.Module, update: Named | None, length: int, training: TextTraining, view: str, **extra: object
) -> TextObservation:
    return TextObservation(
        model,
        update,
        length,
        batch_size=training.batch_size or 0,
        steps=training.steps if training.upload == "weights" else 1,
        view=view,
        **extra,  # type: ignore[arg-type]
    )


def _bound(obs: TextObservation, client: TextClient) -> TextObservation:
    """The protocol's batch size when the suite leaves it to the data (a batch of all the client's blocks)."""
    return obs if obs.batch_size else replace(obs, batch_size=len(client.blocks))


def raw_view(
    model: nn.Module,
    client: TextClient,
    training: TextTraining,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """The upload as sent (with ``dp``: as its client privatized it)."""
    training = _weights(training, dp)
    received = client_upload(model, client, training, dp, noise)
    label = "raw" if dp is None else f"dp-z{dp.noise_multiplier:g}-c{dp.clip:g}"
    obs = _observation(model, pseudo_gradient(model, received, training), client.blocks.shape[1], training, label)
    return _bound(replace(obs, notes=_dp_notes(dp)), client)


def encrypted_view(
    model: nn.Module, client: TextClient, training: TextTraining, mode: str = "host-he"
) -> TextObservation:
    """What an honest aggregator holds under full HE: ciphertext only, no update to read."""
    obs = _observation(model, None, client.blocks.shape[1], training, f"{mode}-aggregator")
    return _bound(replace(obs, notes=("every coordinate encrypted: the aggregator reads none",)), client)


def selective_view(
    model: nn.Module,
    client: TextClient,
    training: TextTraining,
    encrypted: dict[str, torch.Tensor],
    label: str,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """The plaintext coordinates of the upload (``encrypted``: True where a coordinate is encrypted; with ``dp``:
    of the privatized upload)."""
    training = _weights(training, dp)
    received = client_upload(model, client, training, dp, noise)
    update = pseudo_gradient(model, received, training)
    visible = {n: ~encrypted[n].bool() for n in update}
    hidden = {n: torch.where(visible[n], t, torch.zeros((), dtype=t.dtype)) for n, t in update.items()}
    share = sum(int(v.sum()) for v in visible.values()) / sum(v.numel() for v in visible.values())
    length = client.blocks.shape[1]
    obs = _observation(model, hidden, length, training, _dp_label(f"selective-{label}", dp), visible=visible)
    note = f"{1 - share:.1%} of the update encrypted ({label}); the mask is known"
    return _bound(replace(obs, notes=(note, *_dp_notes(dp))), client)


def dp_view(
    model: nn.Module, client: TextClient, training: TextTraining, spec: DPSpec, noise: NoiseSource | None = None
) -> TextObservation:
    """Client-level DP on a plaintext upload: the trained-minus-global update clipped and noised (:func:`raw_view`
    with ``dp``)."""
    return raw_view(model, client, training, spec, noise)


def _flat(update: Named) -> tuple[torch.Tensor, ...]:
    return tuple(t.detach().float() for t in update.values())


def _named(like: Named, tensors: tuple[torch.Tensor, ...]) -> Named:
    return dict(zip(like, tensors, strict=True))


def secagg_sum_view(
    model: nn.Module,
    clients: list[TextClient],
    training: TextTraining,
    params: dict | None = None,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """A real SecAgg+ round of every client's upload (the victim first; with ``dp``: each privatized by its
    client): the adversary holds their mean."""
    from hebench.inversion.views.conduits import Protocol, model_digest, secagg

    training = _weights(training, dp)
    uploads = [client_upload(model, c, training, dp, noise) for c in clients]
    digests = [model_digest(model)] * len(clients)
    conveyed = secagg(Protocol("secagg", "plain", params or {}), [_flat(u) for u in uploads], digests=digests)
    length, label = clients[0].blocks.shape[1], _dp_label(f"secagg-sum-{len(clients)}", dp)
    if conveyed.gradients is None:
        obs = _observation(model, None, length, training, label)
        return replace(obs, notes=(conveyed.detected or "the round gave nothing",))
    mean = pseudo_gradient(model, _named(uploads[0], conveyed.gradients), training)
    obs = _observation(model, mean, length, training, label, clients=len(clients), notes=_dp_notes(dp, len(clients)))
    return obs if obs.batch_size else replace(obs, batch_size=max(len(c.blocks) for c in clients))


def host_he_colluder_view(
    model: nn.Module,
    client: TextClient,
    training: TextTraining,
    adapter: str = "tenseal-ckks",
    params: dict | None = None,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """host-HE with a colluding client: its key set (every client's) decrypts the victim's real ciphertext (with
    ``dp``: of the privatized upload, as the victim encrypts it)."""
    from hebench.inversion.views.conduits import Protocol, he_key

    training = _weights(training, dp)
    received = client_upload(model, client, training, dp, noise)
    conveyed = he_key(Protocol("host-he", adapter, params or {}), _flat(received))
    assert conveyed.gradients is not None
    update = pseudo_gradient(model, _named(received, conveyed.gradients), training)
    label = _dp_label(f"host-he-colluder-{adapter}", dp)
    obs = _observation(model, update, client.blocks.shape[1], training, label, notes=_dp_notes(dp))
    return _bound(obs, client)


def shares_view(
    model: nn.Module,
    client: TextClient,
    training: TextTraining,
    holders: int,
    params: dict | None = None,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """Secret sharing: ``holders`` of the K share holders add their shares (all K: the update, privatized with
    ``dp``; fewer: nothing)."""
    from hebench.inversion.views.conduits import Protocol, shares

    training = _weights(training, dp)
    received = client_upload(model, client, training, dp, noise)
    conveyed = shares(Protocol("secret-sharing", "plain", params or {}), _flat(received), holders)
    length = client.blocks.shape[1]
    if conveyed.gradients is None:
        obs = _observation(model, None, length, training, f"shares-{holders}")
        return _bound(replace(obs, notes=("fewer than all share holders: uniform words",)), client)
    update = pseudo_gradient(model, _named(received, conveyed.gradients), training)
    obs = _observation(model, update, length, training, _dp_label(f"shares-{holders}", dp), notes=_dp_notes(dp))
    return _bound(obs, client)


def dead_language_model(model: nn.Module) -> nn.Module:
    """The model a lying secagg aggregator sends the non-victims: its update is zero on every tensor the attack reads.

    LoRA: every adapter zeroed (``B = 0`` and ``A = 0``: both gradients vanish). Full fine-tuning: the final
    LayerNorm's scale and shift zeroed, so the logits are 0 and no gradient reaches any layer below; only that
    LayerNorm's own two tensors move (the adversary leaves them out)."""
    dead = copy.deepcopy(model)
    with torch.no_grad():
        adapters = [p for n, p in dead.named_parameters() if ".lora_" in n]
        if adapters:
            for p in adapters:
                p.zero_()
        else:
            inner = dead.get_base_model() if hasattr(dead, "get_base_model") else dead
            if not hasattr(inner, "transformer"):
                raise ParameterError("model inconsistency on text reads GPT-2-architecture decoders", "use a decoder")
            inner.transformer.ln_f.weight.zero_()
            inner.transformer.ln_f.bias.zero_()
    return dead


def model_inconsistency_view(
    model: nn.Module,
    clients: list[TextClient],
    training: TextTraining,
    params: dict | None = None,
    dp: DPSpec | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """secagg with model inconsistency: the victim (first) gets the real model, the others a dead one, and every
    upload goes through a real round. The round's result divided by the victim's weight is the sum of the uploads;
    the adversary subtracts what the dead models upload apart from their own moving tensors (their starting
    weights, for a weights upload; nothing, for a gradient) and leaves the final LayerNorm out. With ``dp`` every
    client privatizes its upload: the others' noise stays in the sum (the adversary cannot remove it)."""
    from hebench.inversion.views.conduits import Protocol, model_digest, secagg

    training = _weights(training, dp)
    dead = dead_language_model(model)
    victim = client_upload(model, clients[0], training, dp, noise)
    others = [client_upload(dead, c, training, dp, noise) for c in clients[1:]]
    digests = [model_digest(model)] + [model_digest(dead)] * len(others)
    sent = [_flat(victim)] + [_flat(u) for u in others]
    conveyed = secagg(Protocol("secagg", "plain", params or {}), sent, digests=digests, isolate=True)
    length, label = clients[0].blocks.shape[1], _dp_label("model-inconsistency", dp)
    if conveyed.gradients is None:
        obs = _observation(model, None, length, training, label)
        return _bound(replace(obs, notes=(conveyed.detected or "the round gave nothing",)), clients[0])
    total = _named(victim, conveyed.gradients)
    if training.upload == "weights":
        start_dead = dict(shared_tensors(dead))
        total = {n: t.double() - len(others) * start_dead[n].detach().double() for n, t in total.items()}
    update = pseudo_gradient(model, total, training)
    moving = {n for n in update if n.endswith("ln_f.weight") or n.endswith("ln_f.bias")}
    visible = {n: torch.full_like(t, n not in moving, dtype=torch.bool) for n, t in update.items()}
    obs = _observation(
        model, update, length, training, label, visible=visible if moving else None, notes=_dp_notes(dp, len(clients))
    )
    return _bound(obs, clients[0])


ViewFn = Callable[..., TextObservation]
