"""Text leakage of a language-model suite or run: each configuration's views attacked, per victim batch size.

For every configuration (a TEE configuration is not attacked: its enclave is trusted) the aggregator's view and
the single-update threat models the mode defines are rebuilt through the protections' own code
(:mod:`.views`): ``plain`` (the raw mode, also over TLS, which ends at the aggregator), ``encrypted`` (host-HE,
offload, decryptor-HE: the aggregator holds ciphertext) and host-HE's colluding client, ``selective-<source>``
(the configuration's mask made from each mask source's data, :mod:`.masks`, over the victim's update, known to
the adversary; ``selective`` for a mask that does not depend on data), secagg's sum of the round's clients and
its model-inconsistency attack, secret sharing's one holder and all K holders. A configuration with client-level
DP gives its mode's views, each carrying the privatized uploads (``dp`` for the raw mode's, ``dp+<view>`` for
the others; the views that carry nothing keep their names). The victim is client 0 with ``batch`` of its blocks;
it trains as the suite says (local steps, learning rate, optimiser) on that batch and uploads its weights. Each
view is attacked with the exact span attack (or the optimisation baseline) and scored against the victim's blocks
(:mod:`hebench.inversion.scoring.text`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hebench.config import Configuration, Suite
from hebench.errors import ParameterError
from hebench.inversion.scoring.text import pool, score_reconstruction
from hebench.inversion.text.masks import Mask, source_mask
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import TextReconstruction
from hebench.inversion.text.views import (
    TextClient,
    TextTraining,
    encrypted_view,
    host_he_colluder_view,
    model_inconsistency_view,
    raw_view,
    secagg_sum_view,
    selective_view,
    shares_view,
)
from hebench.protections.dp.noise import NoiseSource
from hebench.protections.selective.mask_source import MASK_SOURCES
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.spec import AttackerView, KeyHolders
from hebench.protections.threats import Conduit

EXAMPLES = 3  # sequences per view shown beside the original


DEFAULT_MASK_SOURCES = ("global",)  # what a run's clients agree on (every client's map summed)
UNOBSERVED = ("encrypted", "shares-1")  # views that carry no update, with DP or without


@dataclass(frozen=True)
class TextView:
    """One adversary's view of one configuration."""

    config: str
    adversary: str  # aggregator, colluding client, all share holders, model inconsistency
    view: str  # plain, dp, encrypted, selective-global, secagg-sum, dp+secagg-sum, host-he-colluder, shares-1, ...
    kind: str = ""  # the mode's view it is (plain, selective, secagg-sum, ...; default: ``view``)
    mask_source: str | None = None  # a data-dependent selective mask's: sample, local or global

    @property
    def base(self) -> str:
        return self.kind or self.view

    def fields(self) -> dict[str, Any]:
        """What a record says of the view."""
        return {"config": self.config, "adversary": self.adversary, "view": self.view, "mask_source": self.mask_source}


def check_mask_sources(sources: Sequence[str]) -> tuple[str, ...]:
    """``sources`` as given, each a known mask source, at least one."""
    unknown = [s for s in sources if s not in MASK_SOURCES]
    if unknown or not sources:
        raise ParameterError(
            f"mask source {unknown[0]!r} is unknown" if unknown else "no mask source given",
            f"use one or more of {', '.join(MASK_SOURCES)} (e.g. --mask-source global,local)",
        )
    return tuple(dict.fromkeys(sources))


def _mode_views(config: Configuration, sources: Sequence[str]) -> list[TextView]:
    """The views ``config``'s mode (and selective masks) give, before DP."""
    label, spec = config.label, config.spec
    seen = spec.attacker_view
    if config.selective is not None:
        if config.selective.mask != "sensitivity":  # the same mask from any data
            return [TextView(label, "aggregator", "selective")]
        return [TextView(label, "aggregator", f"selective-{s}", "selective", s) for s in sources]
    conduits = {rule.conduit for rule in spec.conduits}
    if seen is AttackerView.FULL_UPDATE:
        return [TextView(label, "aggregator", "plain")]
    if seen is AttackerView.NOTHING:
        views = [TextView(label, "aggregator", "encrypted")]
        if spec.key_holders is KeyHolders.CLIENTS:  # every client holds the key set: a colluder decrypts
            views.append(TextView(label, "colluding client", "host-he-colluder"))
        return views
    if seen is AttackerView.SUM:
        views = [TextView(label, "aggregator", "secagg-sum")]
        if Conduit.SECAGG_INCONSISTENCY in conduits:
            views.append(TextView(label, "aggregator", "model-inconsistency"))
        return views
    if seen is AttackerView.SHARES:
        return [TextView(label, "one share holder", "shares-1"), TextView(label, "all share holders", "shares-all")]
    return []


def _privatized(view: TextView) -> TextView:
    """``view`` of a DP configuration: the same adversary, reading its clients' privatized uploads."""
    if view.base in UNOBSERVED:
        return view
    name = "dp" if view.base == "plain" else f"dp+{view.view}"
    return TextView(view.config, view.adversary, name, view.base, view.mask_source)


def views_of(config: Configuration, mask_sources: Sequence[str] = DEFAULT_MASK_SOURCES) -> list[TextView]:
    """The views a configuration gives (its mode's spec says which): the aggregator's, then the single-update
    threat models the mode defines (a colluding client holding the clients' key set, all share holders, a lying
    secagg aggregator's model inconsistency); a sensitivity-masked selective configuration's once per mask source;
    with client-level DP, each reading the privatized uploads."""
    if config.tee is not None:
        return []
    views = _mode_views(config, check_mask_sources(mask_sources))
    return [_privatized(v) for v in views] if config.dp is not None else views


def skipped_of(config: Configuration) -> str | None:
    """Why a configuration gives no view here (None: it gives some)."""
    if views_of(config):
        return None
    if config.tee is not None:
        return f"{config.label}: a TEE configuration (its enclave is trusted) is not attacked"
    return f"{config.label}: mode {config.mode} has no text view yet"


def training_of(suite: Suite, batch: int) -> TextTraining:
    """How the victim trains on its batch: the suite's local steps, learning rate and optimiser."""
    spec = suite.training
    optimiser = spec.optimizer if spec.optimizer in ("sgd", "adamw") else None
    if optimiser is None:
        raise ParameterError(
            f"the text views train with sgd or adamw, not {spec.optimizer}", "set training.optimizer: sgd or adamw"
        )
    steps = spec.local_steps if spec.local_steps is not None else spec.local_epochs
    return TextTraining(steps, batch, spec.lr, "weights", suite.seed, optimiser)


def mask_of(
    view: TextView,
    config: Configuration,
    model: nn.Module,
    attacked: TextClient,
    held: Sequence[TextClient],
    seed: int,
) -> Mask:
    """The selective mask ``view`` reads through: the configuration's, from its mask source's data (``attacked``:
    the victim's batch; ``held``: every client's blocks, the victim's first)."""
    assert config.selective is not None
    spec = config.selective
    return source_mask(
        spec,
        model,
        view.mask_source or "global",
        (attacked.blocks, attacked.labels),
        [(c.blocks, c.labels) for c in held],
        seed,
    )


def observe(
    view: TextView,
    config: Configuration,
    model: nn.Module,
    clients: Sequence[TextClient],
    training: TextTraining,
    mask: Mask | None = None,
    noise: NoiseSource | None = None,
) -> TextObservation:
    """Build ``view``'s observation of the victim ``clients[0]`` (the others: the rest of its round); ``mask``: a
    selective view's (:func:`mask_of`). A DP configuration's clients privatize their uploads (``noise``: secret to
    them unless a test passes a seeded source)."""
    victim, dp, kind = clients[0], config.dp, view.base
    if kind == "plain":
        return raw_view(model, victim, training, dp, noise)
    if kind == "encrypted":
        return encrypted_view(model, victim, training, config.spec.name)
    if kind == "host-he-colluder":
        adapter = config.adapter or "tenseal-ckks"
        return host_he_colluder_view(model, victim, training, adapter, config.params, dp, noise)
    if kind == "selective":
        sel = config.selective
        assert sel is not None
        if mask is None:
            raise ParameterError("a selective view needs its mask", "pass mask_of(view, ...)")
        source = f"-{view.mask_source}" if view.mask_source else ""
        return selective_view(model, victim, training, mask, f"{sel.mask}-{sel.ratio:g}{source}", dp, noise)
    if kind == "secagg-sum":
        return secagg_sum_view(model, list(clients), training, config.params, dp, noise)
    if kind == "model-inconsistency":
        return model_inconsistency_view(model, list(clients), training, config.params, dp, noise)
    if kind.startswith("shares-"):
        holders = SecretSharingParams.model_validate(config.params).aggregators  # the protocol's K, its default too
        return shares_view(model, victim, training, holders if kind == "shares-all" else 1, config.params, dp, noise)
    raise ParameterError(f"unknown text view {view.view!r}", "use one views_of gives")


def _examples(
    references: list[list[int]], result: TextReconstruction, per: Sequence[dict[str, float]], decode: Callable
) -> list[dict[str, Any]]:
    """A few references beside what the attack recovered for them (its best-matching sequence)."""
    out = []
    recovered = result.token_lists
    for i, ref in enumerate(references[:EXAMPLES]):
        best = max(recovered, key=lambda r: sum(a == b for a, b in zip(r, ref, strict=False)), default=None)
        out.append(
            {
                "original": decode(ref),
                "recovered": decode(best) if best is not None else None,
                "rouge1": per[i]["rouge1"],
                "exact": bool(per[i]["exact"]),
            }
        )
    return out


@dataclass(frozen=True)
class Victims:
    """The round's clients' blocks for one victim batch (client 0 the victim)."""

    clients: tuple[TextClient, ...]


def victims(blocks: Sequence[torch.Tensor], batch: int, index: int, per_round: int) -> Victims:
    """Batch ``index`` of ``batch`` blocks from each of the round's first ``per_round`` clients."""
    chosen = []
    for c in range(min(per_round, len(blocks))):
        held = blocks[c]
        start = index * batch
        if start + batch > len(held):
            if c == 0:
                raise ParameterError(
                    f"client 0 holds {len(held)} blocks: no batch {index} of {batch}", "attack fewer or smaller batches"
                )
            start = 0
        chosen.append(TextClient(held[start : start + batch].clone()))
    return Victims(tuple(chosen))


def attack_views(
    suite: Suite,
    models: Callable[[Configuration], nn.Module],
    blocks: Sequence[torch.Tensor],
    decode: Callable[[Sequence[int]], str],
    batch_sizes: Sequence[int],
    batches: int = 1,
    attack: Callable[[TextObservation], TextReconstruction] | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    on_summary: Callable[[dict[str, Any]], None] | None = None,
    mask_sources: Sequence[str] | None = None,
    done: Collection[tuple[str, str, int]] = (),
) -> tuple[list[dict[str, Any]], list[str]]:
    """Attack every view of every configuration of ``suite`` for each victim batch size; records and summaries.

    ``models(config)`` gives the global model the round's updates were computed on; ``blocks`` each client's
    token blocks; ``mask_sources``: whose data a sensitivity mask comes from (None: the suite's ``text_leakage``
    block's, by default ``global``, the mask a run agrees). Returns the summaries (one per configuration, view and
    batch size, each also handed to ``on_summary`` when made; ``on_record`` gets each victim batch's) and the notes
    (skipped configurations). ``done``: the (configuration, view, batch size) already summarised (a resumed run's),
    not attacked again."""
    from hebench.inversion.text.span_attack import span_attack

    attack = attack or span_attack
    if mask_sources is None:
        mask_sources = suite.text_leakage.mask_sources if suite.text_leakage is not None else DEFAULT_MASK_SOURCES
    sources = check_mask_sources(mask_sources)
    per_round = suite.training.clients_per_round or len(blocks)
    held = [TextClient(b) for b in blocks]  # each client's own blocks: the local and global masks' data
    notes = [n for c in suite.configurations if (n := skipped_of(c)) is not None]
    summaries = []
    for config in suite.configurations:
        views = views_of(config, sources)
        if all((v.config, v.view, b) in done for v in views for b in batch_sizes):
            continue
        model = models(config)
        masks: dict[str | None, Mask] = {}  # the masks that do not depend on the attacked batch, made once
        for batch in batch_sizes:
            training = training_of(suite, batch)
            for view in views:
                if (view.config, view.view, batch) in done:
                    continue
                scores, outcomes, examples, why, seconds = [], {}, [], "", 0.0
                for index in range(batches):
                    round_clients = victims(blocks, batch, index, per_round).clients
                    started = time.perf_counter()
                    mask = None
                    if view.base == "selective":
                        if view.mask_source == "sample":
                            mask = mask_of(view, config, model, round_clients[0], held, suite.seed)
                        else:
                            key = view.mask_source
                            if key not in masks:
                                masks[key] = mask_of(view, config, model, round_clients[0], held, suite.seed)
                            mask = masks[key]
                    obs = observe(view, config, model, round_clients, training, mask)
                    result = attack(obs)
                    seconds += time.perf_counter() - started
                    references = round_clients[0].blocks.tolist()
                    score = score_reconstruction(references, result)
                    scores.append(score)
                    outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
                    why = why or (f"{result.reason}: {result.why}" if result.reason else "")
                    if index == 0:
                        examples = _examples(references, result, score.per_sequence, decode)
                    if on_record is not None:
                        on_record(
                            {
                                **view.fields(),
                                "batch_size": batch,
                                "batch": index,
                                "attack": result.attack,
                                "outcome": result.outcome,
                                "reason": str(result.reason) if result.reason else None,
                                "why": result.why,
                                "references": references,
                                "recovered_tokens": result.token_lists,
                                **score.to_dict(),
                            }
                        )
                summary = {
                    "config": view.config,
                    "adversary": view.adversary,
                    "view": view.view,
                    "mask_source": view.mask_source,
                    "batch_size": batch,
                    "length": blocks[0].shape[1],
                    "steps": training.steps,
                    "optimiser": training.optimiser,
                    "batches": batches,
                    "outcomes": outcomes,
                    "why": why,
                    "attack_s": seconds,
                    **pool(scores),
                    "examples": examples,
                }
                summaries.append(summary)
                if on_summary is not None:
                    on_summary(summary)
    return summaries, notes
