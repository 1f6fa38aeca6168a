"""The text views of DP on every mode and of selective masks from each mask source: each holds what the protocol
gives (a DP'd round's quantised mean, a colluder's decryption of the DP'd upload, the DP'd plaintext coordinates;
an encrypted aggregator nothing), and each mask is made from its source's data only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from typer.testing import CliRunner

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.cli.main import app
from hebench.config import Configuration, parse_suite
from hebench.errors import ParameterError
from hebench.inversion.text.campaign import (
    TextView,
    attack_views,
    check_mask_sources,
    mask_of,
    observe,
    skipped_of,
    views_of,
)
from hebench.inversion.text.masks import source_mask
from hebench.inversion.text.result import Why
from hebench.inversion.text.span_attack import span_attack
from hebench.inversion.text.views import (
    TextClient,
    TextTraining,
    client_upload,
    pseudo_gradient,
    raw_view,
    secagg_sum_view,
    selective_view,
)
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.lora import LoraSpec, attach_lora
from hebench.protections.dp.noise import SeededNoise
from hebench.protections.dp.spec import DPSpec
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.selective.spec import SelectiveSpec

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[3]
VOCAB = 512
DP = DPSpec(level="client", clip=1.0, noise_multiplier=0.01)
TRAINING = TextTraining(lr=0.01)


def _lora():
    """The tiny decoder with rank-4 adapters: a few thousand coordinates, so protocol rounds take well under a s."""
    return attach_lora(build_decoder(decoder_shape("gpt2_tiny"), VOCAB, 0, seed=0), LoraSpec(rank=4))


def _blocks(n: int, length: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n, length), generator=torch.Generator().manual_seed(seed))


def _noise(seed: int = 7) -> SeededNoise:
    return SeededNoise(np.random.default_rng(seed))


def _flat(update) -> torch.Tensor:
    return torch.cat([t.reshape(-1).double() for t in update.values()])


def test_dp_secagg_view_is_the_rounds_quantised_mean_of_the_privatized_uploads():
    # Arrange: three clients, each privatizing its upload (seeded noise, drawn victim first, as the view draws it)
    model = _lora()
    clients = [TextClient(_blocks(2, 8, seed)) for seed in (1, 2, 3)]
    noise = _noise()
    sent = [client_upload(model, c, TRAINING, DP, noise) for c in clients]
    mean = {n: sum(u[n].double() for u in sent) / len(sent) for n in sent[0]}
    clean = [client_upload(model, c, TRAINING) for c in clients]
    clean_mean = {n: sum(u[n].double() for u in clean) / len(clean) for n in clean[0]}
    # Act: a real SecAgg+ round of the same clients under the same DP
    obs = secagg_sum_view(model, clients, TRAINING, dp=DP, noise=_noise())
    # Assert: the round's mean of the privatized uploads, to the protocol's quantisation: each client rounds its
    # weighted upload stochastically to a step, so the mean is off by less than one step per client (/ lr here)
    assert obs.update is not None and obs.clients == 3 and "dp" in obs.view
    params = SecAggParams()
    step = 2 * params.clipping_range / params.quantization_range / TRAINING.lr
    seen, expected = _flat(obs.update), _flat(pseudo_gradient(model, mean, TRAINING))
    assert float((seen - expected).abs().max()) <= len(clients) * step
    # and not the clean mean: the noise (std 0.01 per coordinate, / lr) is in what the aggregator holds
    assert float((seen - _flat(pseudo_gradient(model, clean_mean, TRAINING))).abs().max()) > 100 * step


def test_dp_on_host_he_the_aggregator_reads_nothing_and_a_colluder_decrypts_the_privatized_upload():
    model, victim = _lora(), TextClient(_blocks(2, 8, 1))
    config = Configuration(mode="host-he", adapter="tenseal-ckks", dp=DP)
    views = views_of(config)
    assert [(v.adversary, v.view) for v in views] == [
        ("aggregator", "encrypted"),
        ("colluding client", "dp+host-he-colluder"),
    ]
    sealed = observe(views[0], config, model, [victim], TRAINING)
    assert sealed.update is None and span_attack(sealed).reason is Why.NOTHING_OBSERVED
    # the colluder's key set opens the victim's real CKKS ciphertext of its DP'd upload: that upload, to CKKS' error
    opened = observe(views[1], config, model, [victim], TRAINING, noise=_noise())
    assert opened.update is not None
    privatized = raw_view(model, victim, TRAINING, DP, _noise())
    assert privatized.update is not None
    assert torch.allclose(_flat(opened.update), _flat(privatized.update), atol=1e-2)  # CKKS ~1e-6 of w, / lr
    clean = raw_view(model, victim, TRAINING)
    assert clean.update is not None and not torch.allclose(_flat(opened.update), _flat(clean.update), atol=0.1)


def test_dp_selective_view_holds_the_privatized_updates_plaintext_coordinates_only():
    model, victim = _lora(), TextClient(_blocks(2, 8, 1))
    gen = torch.Generator().manual_seed(3)
    mask = {n: torch.rand(p.shape, generator=gen) < 0.3 for n, p in model.named_parameters() if p.requires_grad}
    obs = selective_view(model, victim, TRAINING, mask, "random-30", DP, _noise())
    privatized = raw_view(model, victim, TRAINING, DP, _noise())
    assert obs.update is not None and obs.visible is not None and privatized.update is not None
    for name, seen in obs.update.items():
        shown = ~mask[name]
        assert torch.equal(obs.visible[name], shown)
        assert torch.equal(seen[shown], privatized.update[name][shown])  # the DP'd values, in the clear
        assert not bool(seen[~shown].any())  # the encrypted ones: not read


def test_a_dp_configuration_of_each_mode_gives_its_modes_views_over_privatized_uploads():
    def names(**config) -> list[tuple[str, str]]:
        return [(v.adversary, v.view) for v in views_of(Configuration(dp=DP, **config), ("global", "local"))]

    assert names(mode="raw") == [("aggregator", "dp")]
    assert names(mode="secagg") == [("aggregator", "dp+secagg-sum"), ("aggregator", "dp+model-inconsistency")]
    assert names(mode="secret-sharing", params={"aggregators": 3}) == [
        ("one share holder", "shares-1"),
        ("all share holders", "dp+shares-all"),
    ]
    sensitivity = SelectiveSpec(mask="sensitivity", ratio=0.1, samples=2)
    assert names(mode="host-he", adapter="tenseal-ckks", selective=sensitivity) == [
        ("aggregator", "dp+selective-global"),
        ("aggregator", "dp+selective-local"),
    ]
    assert skipped_of(Configuration(mode="secagg", dp=DP)) is None


def _held() -> list[TextClient]:
    return [TextClient(_blocks(6, 8, seed)) for seed in (11, 12, 13)]


def test_each_mask_source_is_made_from_its_own_data_only():
    # Arrange: the victim holds 6 blocks; its map (local) reads its first 2; the attacked batch is blocks 4-5
    model, held = _lora(), _held()
    spec = SelectiveSpec(mask="sensitivity", ratio=0.1, samples=2)

    def mask(source: str, attacked: torch.Tensor, clients: list[TextClient]) -> torch.Tensor:
        made = source_mask(spec, model, source, (attacked, None), [(c.blocks, None) for c in clients], seed=0)
        return torch.cat([m.reshape(-1) for m in made.values()])

    attacked, other = held[0].blocks[4:6], _blocks(2, 8, 99)
    changed = [held[0], held[1], TextClient(_blocks(6, 8, 14))]  # another client's data changed
    local, sample, overall = (
        mask("local", attacked, held),
        mask("sample", attacked, held),
        mask("global", attacked, held),
    )
    # Assert: each the top 10 %; local is not the attacked batch's mask, nor the agreed one
    assert int(local.sum()) == int(sample.sum()) == int(overall.sum()) == int(np.ceil(0.1 * local.numel()))
    assert not torch.equal(local, sample) and not torch.equal(local, overall)
    # local: the victim's own blocks, whatever batch is attacked and whatever the others hold
    assert torch.equal(mask("local", other, held), local) and torch.equal(mask("local", attacked, changed), local)
    # sample: the attacked batch's, whoever else holds what
    assert not torch.equal(mask("sample", other, held), sample) and torch.equal(
        mask("sample", attacked, changed), sample
    )
    # global: every client's map, whatever batch is attacked
    assert torch.equal(mask("global", other, held), overall) and not torch.equal(
        mask("global", attacked, changed), overall
    )


def test_a_data_free_mask_is_the_same_from_every_source_and_its_view_says_no_source():
    model, held = _lora(), _held()
    config = Configuration(mode="host-he", adapter="tenseal-ckks", selective=SelectiveSpec(mask="magnitude", ratio=0.2))
    (view,) = views_of(config, ("sample", "local", "global"))
    assert view.view == "selective" and view.mask_source is None
    made = mask_of(view, config, model, held[0], held, seed=0)
    again = mask_of(
        TextView(config.label, "aggregator", "selective", "selective", "sample"), config, model, held[1], held, 0
    )
    assert all(torch.equal(made[n], again[n]) for n in made)


def test_an_unknown_mask_source_is_a_parameter_error_and_the_cli_says_error_and_fix():
    with pytest.raises(ParameterError, match="mask source 'everyone' is unknown"):
        check_mask_sources(["global", "everyone"])
    suite = ROOT / "suites" / "text-leakage.yaml"
    result = CliRunner().invoke(app, ["attack", str(suite), "--mask-source", "global,everyone"])
    assert result.exit_code != 0
    assert "error: mask source 'everyone' is unknown" in result.output and "fix:" in result.output


def test_a_campaign_attacks_each_suite_mask_source_and_records_it():
    raw = yaml.safe_load((ROOT / "suites" / "text-leakage.yaml").read_text())
    raw["data"]["block_tokens"] = 8
    raw["configurations"] = [
        {
            "name": "sel",
            "mode": "host-he",
            "adapter": "tenseal-ckks",
            "selective": {"mask": "sensitivity", "samples": 2},
        },
        {"name": "sa", "mode": "secagg", "dp": {"level": "client", "clip": 1.0, "noise_multiplier": 0.01}},
    ]
    raw["text_leakage"] = {"mask_sources": ["local", "sample"]}
    suite = parse_suite(raw)
    records: list[dict] = []
    summaries, notes = attack_views(
        suite, lambda c: _lora(), [c.blocks for c in _held()], str, [1], on_record=records.append
    )
    assert notes == []
    assert [(s["config"], s["view"], s["mask_source"]) for s in summaries] == [
        ("sel", "selective-local", "local"),
        ("sel", "selective-sample", "sample"),
        ("sa", "dp+secagg-sum", None),
        ("sa", "dp+model-inconsistency", None),
    ]
    assert [r["mask_source"] for r in records] == ["local", "sample", None, None]
    # a source given to the campaign replaces the suite's
    only, _ = attack_views(suite, lambda c: _lora(), [c.blocks for c in _held()], str, [1], mask_sources=["global"])
    assert [s["view"] for s in only if s["config"] == "sel"] == ["selective-global"]
