"""The optimisation baseline's batched objective (all restarts in one vmapped pass) against the serial loop it
replaces: the same losses and gradients per restart, the same attack, masking, LoRA, nothing from a sealed view."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.errors import ParameterError
from hebench.inversion.text.anatomy import anatomy_of
from hebench.inversion.text.baseline import BaselineConfig, optimisation_attack
from hebench.inversion.text.baseline_batch import BatchedObjective
from hebench.inversion.text.baseline_matching import Distance, eager_twin, name_of, targets_of
from hebench.inversion.text.baseline_serial import SerialObjective
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import Why
from hebench.inversion.text.views import TextClient, TextTraining, encrypted_view, raw_view
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.lora import LoraSpec, attach_lora

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CPU = torch.device("cpu")
BLOCKS = torch.tensor([[37, 43, 12, 8, 5], [2, 61, 19, 19, 40]])


def _observation(lora: bool = False, dropout: float = 0.0) -> TextObservation:
    model = build_decoder(decoder_shape("gpt2_tiny", dropout=dropout), 64, 0, seed=0)
    if lora:
        model = attach_lora(model, LoraSpec(rank=4))
    return raw_view(model, TextClient(BLOCKS), TextTraining(upload="gradient", batch_size=2))


def _objectives(obs: TextObservation, kind: Distance, prior: float) -> tuple[SerialObjective, BatchedObjective]:
    model = eager_twin(obs.model, CPU)
    wte = anatomy_of(model).net.wte.weight  # type: ignore[union-attr]
    targets = targets_of(obs, model, CPU)
    return (
        SerialObjective(model, wte, targets, kind, 0.01, prior),
        BatchedObjective(model, name_of(model, wte), targets, kind, 0.01, prior),
    )


def _logits(restarts: int, obs: TextObservation) -> torch.Tensor:
    return torch.randn((restarts, obs.batch_size, obs.length, 64), generator=torch.Generator().manual_seed(3))


def _half_hidden(obs: TextObservation, garbage: bool) -> TextObservation:
    """``obs`` with every other coordinate hidden; under the hidden ones, zeros or large garbage."""
    assert obs.update is not None
    visible = {n: torch.arange(t.numel()).reshape(t.shape) % 2 == 0 for n, t in obs.update.items()}
    fill = {n: torch.full_like(t, 1e3) if garbage else torch.zeros_like(t) for n, t in obs.update.items()}
    update = {n: torch.where(visible[n], t, fill[n]) for n, t in obs.update.items()}
    return replace(obs, update=update, visible=visible)


@pytest.mark.parametrize(("kind", "prior", "hidden"), [("cosine", 0.0, False), ("l2", 0.0, True), ("tag", 0.5, True)])
def test_batched_objective_gives_each_restart_the_serial_loss_and_gradient(kind, prior, hidden):
    obs = _half_hidden(_observation(), garbage=True) if hidden else _observation()
    serial, batched = _objectives(obs, kind, prior)
    z = _logits(3, obs)
    (ls, gs), (lb, gb) = serial(z), batched(z)
    assert gs is not None and gb is not None and ls.shape == lb.shape == (3,)
    assert torch.allclose(ls, lb, rtol=1e-5, atol=1e-6)
    assert torch.allclose(gs, gb, rtol=1e-4, atol=1e-6 * float(gs.abs().max()))
    # each restart's loss is its own: evaluating one restart alone gives the same value
    alone, _ = batched(z[1:2])
    assert torch.allclose(alone, lb[1:2], rtol=1e-5, atol=1e-6)


def test_both_engines_run_the_same_attack_for_a_few_steps():
    obs = _observation()
    runs = {
        engine: optimisation_attack(obs, BaselineConfig(restarts=3, steps=4, engine=engine, device="cpu"))
        for engine in ("serial", "batched")
    }
    serial, batched = (runs[e].diagnostics for e in ("serial", "batched"))
    assert batched["engine"] == "batched" and serial["engine"] == "serial" and batched["steps_done"] == 4
    assert torch.allclose(torch.tensor(serial["restart_losses"]), torch.tensor(batched["restart_losses"]), rtol=1e-4)
    assert len(runs["batched"].sequences) == 2 and all(len(s.tokens) == 5 for s in runs["batched"].sequences)


def test_hidden_coordinates_are_not_read_whatever_lies_under_them():
    obs = _observation()
    zeros, garbage = _half_hidden(obs, garbage=False), _half_hidden(obs, garbage=True)
    z = _logits(2, obs)
    for kind in ("cosine", "tag"):
        clean, _ = _objectives(zeros, kind, 0.0)[1](z)
        dirty, _ = _objectives(garbage, kind, 0.0)[1](z)
        assert torch.equal(clean, dirty)
    # and hiding coordinates changes what is matched (the mask is applied, not ignored)
    full, _ = _objectives(obs, "tag", 0.0)[1](z)
    assert not torch.allclose(full, _objectives(zeros, "tag", 0.0)[1](z)[0])


def test_lora_adapters_are_matched_alike_by_both_engines():
    obs = _observation(lora=True)
    assert obs.update is not None and all("lora_" in name for name in obs.update)
    serial, batched = _objectives(obs, "cosine", 0.1)
    z = _logits(2, obs)
    (ls, gs), (lb, gb) = serial(z), batched(z)
    assert gs is not None and gb is not None
    assert torch.allclose(ls, lb, rtol=1e-5, atol=1e-6)
    assert torch.allclose(gs, gb, rtol=1e-4, atol=1e-6 * float(gs.abs().max()))
    result = optimisation_attack(obs, BaselineConfig(restarts=2, steps=2))
    assert result.outcome == "recovered" and len(result.diagnostics["restart_losses"]) == 2


def test_a_model_with_dropout_draws_it_per_restart_in_the_batched_pass():
    result = optimisation_attack(_observation(dropout=0.1), BaselineConfig(restarts=2, steps=1, engine="batched"))
    losses = result.diagnostics["restart_losses"]
    assert result.outcome == "recovered" and all(torch.isfinite(torch.tensor(losses)))


def test_a_sealed_view_gives_the_batched_engine_nothing():
    obs = _observation()
    model = build_decoder(decoder_shape("gpt2_tiny"), 64, 0, seed=0)
    sealed = optimisation_attack(
        encrypted_view(model, TextClient(BLOCKS), TextTraining(upload="gradient")), BaselineConfig(engine="batched")
    )
    assert sealed.reason is Why.NOTHING_OBSERVED and not sealed.token_bag
    assert obs.update is not None
    none_seen = replace(obs, visible={n: torch.zeros_like(t, dtype=torch.bool) for n, t in obs.update.items()})
    blind = optimisation_attack(none_seen, BaselineConfig(engine="batched", steps=1))
    assert blind.reason is Why.NOTHING_OBSERVED and not blind.token_bag


def test_bad_engine_device_or_distance_is_refused_with_a_fix():
    for bad in ({"engine": "vmap"}, {"device": "tpu"}, {"distance": "l3"}, {"restarts": 0}):
        with pytest.raises(ParameterError):
            BaselineConfig(**bad)  # type: ignore[arg-type]
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match="no GPU"):
            optimisation_attack(_observation(), BaselineConfig(device="cuda", steps=1))
