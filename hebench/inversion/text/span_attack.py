"""The exact span attack (DAGER family: Petrov et al., "DAGER: Exact Gradient Inversion for Large Language Models",
NeurIPS 2024): observation -> token sequences, or the reason it cannot recover them.

1. **Tokens.** The first attention projection's gradient rows span that layer's inputs when fewer than its
   width are behind the update (:mod:`.span`, :mod:`.site_rows`); every vocabulary entry at every position is
   tested against that span (:mod:`.vocabulary`); those within ``token_tol`` are the tokens at that position.
2. **Order.** Decoders: sequences grow position by position through the second block's span (causal attention:
   its input at ``p`` depends on tokens ``0..p``; :mod:`.decoder_order`); the last token, a target only in the
   next-token loss, is read from the loss's linearity (:mod:`.last_token`). Encoders (no causal mask): whole
   sequences are searched, each position's token chosen to bring every position's second-layer input onto the span
   (:mod:`.encoder_order`).

Assumptions, checked at run time, each failure a typed result: the view holds the first projection's tensors
(encrypted ones are not read; hidden coordinates are completed at low rank); its rank stays below the width
(full fine-tuning: inputs < width) or below the adapter's rank (LoRA); a deterministic forward (no dropout in
training); sequences no longer than the model's positions. Under several local steps of full fine-tuning the
embeddings move, so the spans are only approximately the inputs' (looser tolerances help, at the cost of false
tokens); DP noise fills the spectrum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import torch

from hebench.inversion.text.anatomy import Decoder, Encoder, anatomy_of
from hebench.inversion.text.decoder_order import grow
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import RecoveredSequence, TextReconstruction, Why, failed
from hebench.inversion.text.site_rows import SiteRows, site_rows
from hebench.inversion.text.span import Span, span_of
from hebench.inversion.text.vocabulary import token_distances

NAME = "span"


@dataclass(frozen=True)
class SpanConfig:
    min_gap: float = 10.0  # the spectrum must drop by this factor where the span is cut (else: the bound rule)
    bound_gap: float = 5.0  # no such drop: the directions this far above the noise past the inputs' bound (0: off)
    token_tol: float = 1e-4  # a token is in the batch when its relative distance to the first span is below this
    order_tol: float = 1e-3  # an extension (decoder) / a sequence (encoder) passes below this second-span distance
    per_gap: float = 1.0  # tolerances widen to per_gap / gap: noise tilts the span by about 1 / gap
    keep: int = 0  # prefixes kept per position (decoder growth; 0: 4 x the protocol's sequences, at least 64)
    per_position: int = 0  # tokens kept per position, the closest (0: 2 x the protocol's sequences, at least 8)
    encoder_sweeps: int = 8  # coordinate sweeps per encoder search
    encoder_starts: int = 0  # searches started (0: one per token at the most diverse position, at most 4 x bound)
    last_token: bool = True  # decoders: read the last token from the loss's linearity
    device: str = "cpu"


def _span(rows: SiteRows, cfg: SpanConfig, bound: int, inputs: int) -> Span:
    """The rows' span: cut at a drop of ``min_gap`` within ``bound``; else, when fewer ``inputs`` than the rows'
    limit reach them, at ``bound_gap`` above the noise past ``inputs`` (an over-full bound gets no bound rule)."""
    bound_gap = cfg.bound_gap if inputs < rows.limit else 0.0
    return span_of(rows.rows.to(cfg.device), cfg.min_gap, bound, inputs=inputs, bound_gap=bound_gap)


def _ranked(
    readings: list[SiteRows], cfg: SpanConfig, bound: int, inputs: int, least: int = 1
) -> list[tuple[SiteRows, Span]]:
    """The readings with their spans, best first: a usable span; one whose dimensions the inputs could span, at
    least ``least`` (the positions tested: each holds an input of its own) and at most ``inputs`` (a sparse reading,
    e.g. LoRA's A after one step, where only DP noise crossing float32's rounding moved some coordinates, is
    exactly low rank with an infinite gap, but not the inputs' span); a drop before the bound rule; the largest gap."""
    spans = [(r, _span(r, cfg, bound, inputs)) for r in readings]

    def key(pair: tuple[SiteRows, Span]) -> tuple[bool, bool, bool, float]:
        span = pair[1]
        plausible = least <= span.rank <= inputs
        return (span.rank > 0, plausible, span.rule == "gap", span.gap if span.rank > 0 else 0.0)

    return sorted(spans, key=key, reverse=True)


def _best(
    readings: list[SiteRows], cfg: SpanConfig, bound: int, inputs: int, least: int = 1
) -> tuple[SiteRows, Span] | None:
    """The best reading (:func:`_ranked`) with its span."""
    return next(iter(_ranked(readings, cfg, bound, inputs, least)), None)


def _tolerance(base: float, span: Span, cfg: SpanConfig) -> float:
    return max(base, cfg.per_gap / span.gap)


def _closest(distances: torch.Tensor, tol: float, cap: int) -> torch.Tensor:
    """The entries within ``tol``, at most ``cap`` of them (the closest), in vocabulary order."""
    inside = torch.nonzero(distances < tol).flatten()
    if len(inside) > cap:
        inside = inside[distances[inside].argsort()[:cap]].sort().values
    return inside


def _pooled(
    distances: torch.Tensor, found: list[torch.Tensor], tol: float, cap: int, bound: int, diag: dict[str, Any]
) -> list[torch.Tensor]:
    """The decoder's candidates per position: the first layer's own, or, where more than ``cap`` tokens passed at
    some position, every token that passed at any position (at most ``bound``, the closest), tried everywhere.

    When position embeddings are small beside token embeddings (a randomly initialised GPT-2), a token of the
    batch is near the span at every position, and a per-position cap can drop the right token; the pool keeps
    it, and the second layer's span orders it."""
    if not any(int((row < tol).sum()) > cap for row in distances):
        return found
    pool = _closest(distances.min(dim=0).values, tol, bound)
    diag["token_pool"] = len(pool)
    return [pool] * len(found)


def _check_span(
    rows: SiteRows, span: Span, obs: TextObservation, layer: str, cfg: SpanConfig
) -> tuple[Why, str] | None:
    """Why this span is not the inputs' span (None: it is usable)."""
    bound = obs.tokens_bound
    cause = (
        f"up to {bound} inputs are behind the update (batch {obs.batch_size} x {obs.length} tokens"
        f"{f' x {obs.steps} steps' if obs.steps > 1 else ''}{f' x {obs.clients} clients' if obs.clients > 1 else ''})"
    )
    if len(span.singular) == 0 or float(span.singular[0]) == 0.0:
        return Why.ZERO_GRADIENT, f"the {layer} layer's observed gradient ({rows.source}) is zero"
    if span.rank == 0:
        what = Why.SPAN_FULL if rows.source == "weight" else Why.ADAPTER_RANK
        return what, (
            f"the {layer} layer's {rows.source} gradient ({len(span.singular)} singular values, against"
            f" {rows.limit_reason}) has no drop in its spectrum (largest ratio {span.gap:.3g} < {cfg.min_gap:g}),"
            f" nor directions {cfg.bound_gap:g}x above the noise past the inputs' bound:"
            f" its rows do not single out the inputs' span ({cause}; more inputs than"
            f" {'the width' if rows.source == 'weight' else 'r'}, noise, or drift over steps fill the spectrum)"
        )
    if span.rank >= rows.limit:
        if rows.source == "weight":
            return Why.SPAN_FULL, (
                f"the {layer} layer's gradient has rank {span.rank}, reaching {rows.limit_reason}: its rows span the"
                f" whole input space, so no token can be told apart ({cause}; noise or drift over steps also fill"
                " the spectrum)"
            )
        return Why.ADAPTER_RANK, (
            f"the {layer} layer's {rows.source} gradient has rank {span.rank}, reaching {rows.limit_reason}: it"
            f" spans an r-dimensional part of the inputs' span, not all of it ({cause}; the test needs fewer"
            f" inputs than r)"
        )
    return None


def _incomplete(span: Span, found: list[torch.Tensor], inputs: int) -> tuple[Why, str] | None:
    """Why a second span cut by the bound rule cannot order the tokens (None: it can). Each distinct (token,
    position) the first layer found is a distinct input of the second layer too (its input depends on the prefix),
    so a span holding fewer directions above the noise than those (at most ``inputs``) has lost some of them to the
    noise: extensions would be judged against part of the span, and wrong ones pass within its wide tolerance."""
    needed = min(sum(len(f) for f in found), inputs)
    if span.rule != "bound" or span.rank >= needed:
        return None
    return Why.ORDER_UNAVAILABLE, (
        f"the second layer's spectrum has no drop; only {span.rank} directions stand above the noise past the"
        f" inputs' bound, fewer than the {needed} inputs the tokens found need: its span is incomplete"
    )


def span_attack(obs: TextObservation, cfg: SpanConfig = SpanConfig()) -> TextReconstruction:
    """Recover the token sequences behind ``obs`` from what the view holds, or say why not. With ``cfg.device``
    other than the CPU the whole attack runs there: the observation's tensors and, for the attack's duration, the
    model are moved (the model goes back where it was)."""
    if cfg.device == "cpu" or obs.update is None:
        return _attack(obs, cfg)
    home = next(obs.model.parameters()).device
    obs.model.to(cfg.device)
    try:
        result = _attack(obs.on(cfg.device), cfg)
    finally:
        obs.model.to(home)
    result.diagnostics["device"] = cfg.device
    return result


def _attack(obs: TextObservation, cfg: SpanConfig) -> TextReconstruction:
    started = time.perf_counter()
    if obs.update is None:
        return failed(NAME, Why.NOTHING_OBSERVED, f"the {obs.view} view holds no update: nothing to attack")
    anatomy = anatomy_of(obs.model)
    if obs.length > anatomy.positions:
        return failed(NAME, Why.TOO_LONG, f"{obs.length} tokens exceed the model's {anatomy.positions} positions")
    diag: dict[str, Any] = {"family": anatomy.family, "tokens_bound": obs.tokens_bound, "view": obs.view}
    if anatomy.dropout() > 0:
        diag["dropout_warning"] = (
            f"the model trains with dropout {anatomy.dropout():g}: the layers' inputs are randomised in training,"
            " the tests assume they are not"
        )
    # positions whose inputs reach the gradient: a decoder's last one feeds no loss term (next-token loss)
    tested = obs.length - 1 if anatomy.family == "decoder" else obs.length
    inputs = obs.sequences_bound * tested  # at most this many inputs reach the rows: the bound rule's count
    readings = _ranked(site_rows(obs, anatomy.first), cfg, obs.tokens_bound, inputs, tested)
    if not readings:
        return failed(
            NAME,
            Why.LAYER_NOT_OBSERVED,
            "the first attention projection's gradient is not in the view (encrypted, not sent, or zero)",
            **diag,
        )
    cap = cfg.per_position or max(2 * obs.sequences_bound, 8)
    first_failure: TextReconstruction | None = None
    for tried, (first, span1) in enumerate(readings, 1):  # the best reading first; the next where it finds no token
        diag.update({"first": {**span1.diagnostics(), **first.diagnostics, "source": first.source}})
        diag["first_readings_tried"] = tried
        problem = _check_span(first, span1, obs, "first", cfg)
        if problem is not None:
            first_failure = first_failure or failed(NAME, problem[0], problem[1], **diag)
            continue
        distances = token_distances(anatomy.inputs(), span1, tested, first.coords)
        token_tol = _tolerance(cfg.token_tol, span1, cfg)
        found = [_closest(row, token_tol, cap) for row in distances]
        diag["token_tol"] = token_tol
        diag["tokens_per_position"] = [len(f) for f in found]
        diag["first_seconds"] = time.perf_counter() - started
        if any(len(f) for f in found):
            break
        closest = float(distances.min())
        first_failure = first_failure or failed(
            NAME,
            Why.NO_TOKENS,
            f"no vocabulary entry is within {token_tol:.3g} of the first span at any position (closest {closest:.2e})",
            **diag,
        )
    else:  # no reading gave a token: the best reading's reason
        assert first_failure is not None
        return first_failure
    by_position = tuple(tuple(int(t) for t in f) for f in found)
    picked2 = _best(site_rows(obs, anatomy.second), cfg, obs.tokens_bound, inputs, tested)
    second, span2 = (None, None) if picked2 is None else picked2
    problem2 = None
    if second is None:
        problem2 = (Why.ORDER_UNAVAILABLE, "the second attention projection's gradient is not in the view")
    else:
        assert span2 is not None
        diag["second"] = {**span2.diagnostics(), **second.diagnostics, "source": second.source}
        problem2 = _check_span(second, span2, obs, "second", cfg) or _incomplete(span2, found, inputs)
    if problem2 is not None:
        return TextReconstruction(
            NAME, "partial", (), by_position, Why.ORDER_UNAVAILABLE, f"tokens by position only: {problem2[1]}", diag
        )
    assert second is not None and span2 is not None
    diag["order_tol"] = order_tol = _tolerance(cfg.order_tol, span2, cfg)
    cfg = replace(cfg, order_tol=order_tol)
    if isinstance(anatomy, Decoder):
        candidates = _pooled(distances, found, token_tol, cap, obs.tokens_bound, diag)
        result = _order_decoder(obs, anatomy, span2, second, candidates, cfg, diag, by_position)
    else:
        result = _order_encoder(obs, anatomy, span2, second, found, cfg, diag, by_position)
    result.diagnostics["seconds"] = time.perf_counter() - started
    return result


def _order_decoder(
    obs: TextObservation,
    anatomy: Decoder,
    span2: Span,
    second: SiteRows,
    found: list[torch.Tensor],
    cfg: SpanConfig,
    diag: dict[str, Any],
    by_position: tuple[tuple[int, ...], ...],
) -> TextReconstruction:
    from hebench.inversion.text.last_token import last_tokens

    keep = cfg.keep or max(4 * obs.sequences_bound, 64)
    growth = grow(anatomy, span2, found, cfg.order_tol, keep, second.coords)
    diag.update({"order_tried": growth.tried, "order_capped": growth.capped, "order_reached": growth.reached})
    if len(growth.tokens) == 0 or growth.reached == 0:
        return TextReconstruction(
            NAME,
            "partial",
            (),
            by_position,
            Why.NO_SEQUENCES,
            f"no prefix passed the second span within {cfg.order_tol:g} (at position {growth.reached})",
            diag,
        )
    prefixes, residuals = growth.tokens.cpu(), growth.residuals.cpu()
    complete = growth.reached == len(found)
    bound = obs.sequences_bound
    if complete and bound and len(prefixes) > bound:  # no more sequences than the protocol allows: the closest
        closest = residuals.amax(dim=1).argsort()[:bound]
        diag["order_dropped_over_bound"] = len(prefixes) - bound
        prefixes, residuals = prefixes[closest], residuals[closest]
    lasts: list[int | None] = [None] * len(prefixes)
    if complete and cfg.last_token and obs.length >= 2:
        known = 1.0 if obs.steps == 1 and obs.clients == 1 else None  # one gradient of the victim's mean loss
        last = last_tokens(obs, prefixes, scale=known)
        lasts = [int(t) for t in last.tokens]
        diag["last_token_margins"] = list(last.margins)
        diag["last_token_scale"] = last.scale
        diag["last_token_method"] = last.method
        diag["last_token_swaps"] = last.swaps
    sequences = tuple(
        RecoveredSequence(
            tuple(int(t) for t in prefixes[i]) + (() if lasts[i] is None else (lasts[i],)),
            tuple(float(r) for r in residuals[i]),
        )
        for i in range(len(prefixes))
    )
    if not complete:
        why = f"prefixes stop at position {growth.reached} of {obs.length}: no extension passed the second span"
        return TextReconstruction(NAME, "partial", sequences, by_position, Why.INCOMPLETE, why, diag)
    note = "" if cfg.last_token else "the last token (a target only) is not read: sequences hold L-1 tokens"
    return TextReconstruction(NAME, "recovered", sequences, by_position, None, note, diag)


def _order_encoder(
    obs: TextObservation,
    anatomy: Encoder,
    span2: Span,
    second: SiteRows,
    found: list[torch.Tensor],
    cfg: SpanConfig,
    diag: dict[str, Any],
    by_position: tuple[tuple[int, ...], ...],
) -> TextReconstruction:
    from hebench.inversion.text.encoder_order import search

    if any(len(f) == 0 for f in found):
        empty = [p for p, f in enumerate(found) if len(f) == 0]
        why = f"no token passed the first span at positions {empty[:8]}: no whole sequence can be formed"
        return TextReconstruction(NAME, "partial", (), by_position, Why.NO_SEQUENCES, why, diag)
    outcome = search(anatomy, span2, found, cfg, obs.sequences_bound, second.coords)
    diag.update(outcome.diagnostics)
    sequences = tuple(RecoveredSequence(tuple(s), tuple(r)) for s, r in outcome.sequences)
    if not sequences:
        why = f"no sequence passed the second span within {cfg.order_tol:g} ({outcome.diagnostics['evaluated']} tried)"
        return TextReconstruction(NAME, "partial", (), by_position, Why.NO_SEQUENCES, why, diag)
    return TextReconstruction(NAME, "recovered", sequences, by_position, None, "", diag)
