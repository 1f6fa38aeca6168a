"""A decoder's last token: in the next-token loss it is a target only, so it is read from the loss's linearity.

The last position's output feeds no loss term, so nothing of its input reaches any gradient: the span recovers
tokens ``0..L-2`` only. The last token ``v_s`` of sequence ``s`` is the target at position ``L-2``, and the loss
is linear in the one-hot target: with the prefixes known, the update is ``g_known - (1/N) sum_s grad logit_{s,v_s}``
(``g_known``: the gradient of every other target's cross-entropy plus each last position's log-partition;
``N``: the targets behind the update). So ``D = g_known - G/alpha`` (``alpha``: the update's scale, fitted) is a
sum of one logit gradient per sequence, and ``<D, grad logit_{s,v}>`` scores every ``v`` at once: it is the
directional derivative of sequence ``s``'s logits at ``L-2`` along ``D`` (central differences on a float64 copy
of the model). The best-scoring token is taken, then each sequence is re-scored with the others' terms removed:
the token whose logit gradient is closest to what is left (``|g_v|^2`` for every ``v`` from the Gram matrix of the
final hidden state's Jacobian, the closest few checked exactly; the inner product alone favours large logit
gradients: a pretrained base's confident tokens).
On a large update (GPT-2 small's 124 M coordinates) the Gram matrix's Jacobian does not fit: the tokens are then read
from the coordinates nearest the output alone (the loss is linear in the targets on any subset), a shortlist of the
best directional scores per sequence checked exactly. Only the update's visible coordinates enter (hidden ones are
unknown, left out). After each sweep, pairs of sequences exchange their last tokens wherever that fits the update
better: one sequence at a time cannot undo tokens cycled between sequences whose final states are alike
(GPT-2 small at random initialisation, B = 8: a 3-cycle that every single change made worse). Exact for one
local step; an approximation over several (the weights move between steps).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hebench.inversion.text.observation import TextObservation

STEP = 1e-3  # central-difference step, relative to the largest parameter magnitude over the largest direction entry
JACOBIAN_BYTES = 2**30  # the Gram route's Jacobian (hidden width x coordinates read, float32) stays below this
SHORTLIST = 64  # tokens per sequence checked exactly where the Gram route does not fit (largest directional scores)
SHORTLIST_COORDINATES = 2**23  # coordinates nearest the output the shortlist route reads (GPT-2 small: its last block)


@dataclass(frozen=True)
class LastTokens:
    tokens: torch.Tensor  # (n,)
    margins: tuple[float, ...]  # per sequence: (best - second best) / |best| score
    scale: float  # the fitted alpha
    method: str  # "gram" (every token ranked by its distance) or "shortlist-K" (the K best scores checked exactly)
    swaps: int = 0  # pairs of sequences whose last tokens the swap passes exchanged


def _visible(obs: TextObservation, names: list[str]) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
    assert obs.update is not None
    parts, masks = [], []
    for name in names:
        seen = obs.tensor(name)
        if seen is None:
            parts.append(torch.zeros_like(obs.update[name]).reshape(-1).double())
            masks.append(torch.zeros(obs.update[name].numel(), dtype=torch.bool, device=obs.update[name].device))
            continue
        values, mask = seen
        every = torch.ones(values.numel(), dtype=torch.bool, device=values.device)
        flat_mask = every if mask is None else mask.reshape(-1).bool()
        parts.append(torch.where(flat_mask, values.reshape(-1).double(), 0.0))
        masks.append(flat_mask)
    return torch.cat(parts), masks


def _nearest_output(obs: TextObservation, order: list[str], per: int, budget: int) -> tuple[list[str], int]:
    """The update's tensors nearest the output (a suffix, in the model's order) whose visible coordinates times
    ``per`` fit ``budget``, and those coordinates: the loss is linear in the targets on any subset of coordinates,
    so the last token reads from these alone (all of them on a small model; on GPT-2 small, its last block). At
    least the last tensor, whatever its size."""
    assert obs.update is not None
    chosen: list[str] = []
    size = 0
    for name in reversed([n for n in order if n in obs.update]):
        found = obs.tensor(name)
        count = 0 if found is None else found[0].numel() if found[1] is None else int(found[1].sum())
        if chosen and (size + count) * per > budget:
            break
        chosen.append(name)
        size += count
    return chosen[::-1], size


def _mask(vector: torch.Tensor, masks: list[torch.Tensor | None]) -> torch.Tensor:
    return vector * torch.cat([m.double() for m in masks if m is not None])


def _grad(twin: nn.Module, params: list[torch.Tensor], loss: torch.Tensor) -> torch.Tensor:
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    parts = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
    return torch.cat([g.reshape(-1) for g in parts])


def _logits(twin: nn.Module, prefixes: torch.Tensor) -> torch.Tensor:
    return twin(input_ids=prefixes).logits[:, -1]  # the logits at the last prefix position (L-2): (n, V)


def _directional(twin: nn.Module, params: list[torch.Tensor], direction: torch.Tensor, prefixes: torch.Tensor):
    """d/de of the last-position logits of ``prefixes`` at ``params + e direction`` (central differences)."""
    size = max(float(direction.abs().max()), torch.finfo(torch.float64).tiny)
    scale = max(float(torch.cat([p.detach().abs().reshape(-1) for p in params]).max()), 1.0)
    eps = STEP * scale / size
    pieces = direction.split([p.numel() for p in params])
    out = []
    with torch.no_grad():
        for sign in (1.0, -1.0):
            for p, piece in zip(params, pieces, strict=True):
                p.add_(sign * eps * piece.reshape(p.shape))
            out.append(_logits(twin, prefixes))
            for p, piece in zip(params, pieces, strict=True):
                p.sub_(sign * eps * piece.reshape(p.shape))
    return (out[0] - out[1]) / (2 * eps)


def _logit_norms(twin: nn.Module, params: list[torch.Tensor], masks: list, prefix: torch.Tensor) -> torch.Tensor:
    """``|grad logit_v|^2`` over the visible coordinates for every ``v`` at the prefix's last position, through the
    Gram matrix of the final hidden state's Jacobian: ``logit_v = w_v . h``, so ``grad logit_v = J^T w_v`` (plus
    ``h`` in row ``v`` of the head when the head is in the update; its cross term, non-zero only for tokens of the
    prefix, is left out: the closest candidates are then checked exactly). One backward pass per hidden unit."""
    inner = twin.get_base_model() if hasattr(twin, "get_base_model") else twin
    head = inner.get_output_embeddings().weight
    hidden = twin(input_ids=prefix, output_hidden_states=True).hidden_states[-1][0, -1]  # after the final norm
    rows = []
    for i in range(hidden.shape[0]):
        grads = torch.autograd.grad(hidden[i], params, retain_graph=True, allow_unused=True)
        flat = torch.cat(
            [(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(params, grads, strict=True)]
        )
        rows.append(_mask(flat, masks).float())
    jacobian = torch.stack(rows)
    gram = (jacobian @ jacobian.T).double()
    del jacobian, rows
    w = head.detach().double()
    norms = ((w @ gram) * w).sum(-1)
    if any(p is head for p in params):
        norms = norms + float(hidden.detach().double() @ hidden.detach().double())
    return norms


def _closest(
    target: torch.Tensor,
    scores: torch.Tensor,
    norms: torch.Tensor | None,
    targets: int,
    k: int,
    exact: Callable[[int], torch.Tensor],
) -> int:
    """The token whose (scaled) logit gradient is closest to ``target``: ``|t - g_v|^2 = |t|^2 - 2 <t, g_v> + |g_v|^2``
    for every ``v`` from the directional ``scores`` and the ``norms``, then the ``k`` closest checked exactly.
    Without ``norms`` (the Gram route does not fit), the ``k`` largest scores are checked exactly."""
    approx = -scores if norms is None else norms / targets**2 - 2 * scores / targets
    best, least = int(scores.argmax()), float("inf")
    for v in approx.topk(min(k, len(approx)), largest=False).indices.tolist():
        residual = float((target - exact(v)).norm())
        if residual < least:
            best, least = v, residual
    return best


def _swap_pass(
    chosen: torch.Tensor,
    pair_change: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    direction: torch.Tensor,
    head_sum: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> int:
    """Exchange the last tokens of two sequences wherever that brings the update closer, the best exchange first,
    until none does; the number made. One sequence at a time cannot leave an assignment whose tokens are right
    but cycled between sequences whose final states are alike (each single change makes a duplicate, which fits
    worse): an exchange can. ``chosen`` is changed in place."""
    n = len(chosen)
    everyone = torch.arange(n, device=chosen.device)
    made = 0
    for _ in range(n * n):
        residual = direction - head_sum(chosen, everyone)
        now = float(residual @ residual)
        best, pair = now, None
        for s in range(n):
            for t in range(s + 1, n):
                if int(chosen[s]) == int(chosen[t]):
                    continue
                rows = torch.tensor([s, t], device=chosen.device)
                trial = residual + pair_change(rows, chosen[rows], chosen[rows].flip(0))
                size = float(trial @ trial)
                if size < best:
                    best, pair = size, (s, t)
        if pair is None:
            break
        s, t = pair
        chosen[s], chosen[t] = int(chosen[t]), int(chosen[s])
        made += 1
    return made


def last_tokens(
    obs: TextObservation, prefixes: torch.Tensor, sweeps: int = 2, scale: float | None = None, rerank: int = 8
) -> LastTokens:
    """The last token of each prefix (n, L-1), read from the update's linearity in the targets. ``scale``: the
    update's known scale (1 for one gradient, or one SGD step read back through the known learning rate; None:
    fitted, as after several steps). A fitted scale starts from the known terms alone, biased where the model
    already predicts its targets well (a pretrained base): the known scale is used whenever the protocol gives it."""
    assert obs.update is not None
    twin = copy.deepcopy(obs.model).double()
    twin.eval()
    named = dict(twin.named_parameters())
    inner = twin.get_base_model() if hasattr(twin, "get_base_model") else twin
    hidden = int(inner.config.n_embd)
    names, seen = _nearest_output(obs, list(named), hidden * 4, JACOBIAN_BYTES)
    gram = seen * hidden * 4 <= JACOBIAN_BYTES and len(names) == len([n for n in obs.update if n in named])
    if not gram:  # a part of a large update: the last block's weights tell the sequences apart, its biases do not
        names, seen = _nearest_output(obs, list(named), 1, SHORTLIST_COORDINATES)
    params = [named[n] for n in names]
    for p in twin.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    observed, masks = _visible(obs, names)
    prefixes = prefixes.to(next(twin.parameters()).device)
    n, width = prefixes.shape
    targets = n * width  # width = L-1 targets per sequence

    def loss_known() -> torch.Tensor:
        logits = twin(input_ids=prefixes).logits  # (n, L-1, V)
        flat = logits[:, :-1].reshape(-1, logits.shape[-1])
        inner = F.cross_entropy(flat, prefixes[:, 1:].reshape(-1), reduction="sum")
        return (inner + torch.logsumexp(logits[:, -1], dim=-1).sum()) / targets

    known = _mask(_grad(twin, params, loss_known()), masks)
    alpha = float(observed @ known) / max(float(known @ known), torch.finfo(torch.float64).tiny)
    alpha = alpha if alpha > 0 else 1.0
    alpha = scale if scale is not None else alpha

    def head_sum(chosen: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        logits = _logits(twin, prefixes[rows])
        return _mask(_grad(twin, params, logits.gather(1, chosen[rows].unsqueeze(1)).sum() / targets), masks)

    def single(s: int, v: int) -> torch.Tensor:
        trial = chosen.clone()
        trial[s] = v
        return head_sum(trial, torch.tensor([s], device=prefixes.device))

    def pair_change(rows: torch.Tensor, now: torch.Tensor, then: torch.Tensor) -> torch.Tensor:
        """What the model's update loses when ``rows`` trade their targets ``now`` for ``then``."""
        logits = _logits(twin, prefixes[rows])
        trade = logits.gather(1, now.unsqueeze(1)).sum() - logits.gather(1, then.unsqueeze(1)).sum()
        return _mask(_grad(twin, params, trade / targets), masks)

    swaps = 0
    norms: dict[int, torch.Tensor | None] = {}
    direction = known - observed / alpha  # (1/N) sum_s grad logit_{s, v_s}
    scores = _directional(twin, params, direction, prefixes)
    chosen = scores.argmax(dim=1)
    everyone = torch.arange(n, device=prefixes.device)
    for _ in range(sweeps):
        full = known - head_sum(chosen, everyone)  # the model's update with the chosen targets
        if scale is None:
            alpha = float(observed @ full) / max(float(full @ full), torch.finfo(torch.float64).tiny) or alpha
        direction = known - observed / alpha
        rest = direction - head_sum(chosen, everyone)
        changed = False
        for s in range(n):
            own = head_sum(chosen, torch.tensor([s], device=prefixes.device))
            row = _directional(twin, params, rest + own, prefixes[s : s + 1])[0]
            if s not in norms:
                norms[s] = _logit_norms(twin, params, masks, prefixes[s : s + 1]) if gram else None
            k = rerank if gram else SHORTLIST
            best = _closest(rest + own, row, norms[s], targets, k, lambda v, s=s: single(s, v))
            if best != int(chosen[s]):
                chosen[s], changed = best, True
                rest = direction - head_sum(chosen, everyone)
            scores[s] = row
        swapped = _swap_pass(chosen, pair_change, direction, head_sum)
        swaps += swapped
        if not changed and not swapped:
            break
    top2 = scores.topk(2, dim=1).values
    margins = tuple(float((a - b) / max(abs(float(a)), 1e-300)) for a, b in top2.tolist())
    return LastTokens(chosen.cpu(), margins, alpha, "gram" if gram else f"shortlist-{SHORTLIST}", swaps)
