"""torch's strong-Wolfe line search (``torch.optim.lbfgs._strong_wolfe``), one search per row of a batch.

Each row's search is torch's code as a generator: where torch calls its objective, the generator yields the
step to try and receives the loss, gradient and directional derivative there. :func:`strong_wolfe` runs every
row's search at once, evaluating the rows that wait for a value in one batch, until every search has ended.
Scalars stay what torch makes them (Python floats and 0-dim float tensors on the CPU), so each row follows
torch's branches; the vectors (gradients) stay on the device.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import torch

Closure = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
Search = Generator[Any, tuple[float, torch.Tensor, torch.Tensor], tuple[float, torch.Tensor, Any, int]]


def cubic_interpolate(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any, bounds: Any = None) -> Any:
    """torch's ``_cubic_interpolate`` (ported from torch/optim's polyinterp.lua), unchanged."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def search(
    t: Any,
    d_norm: torch.Tensor,
    f: float,
    g: torch.Tensor,
    gtd: torch.Tensor,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> Search:
    """One row's strong-Wolfe search (torch's ``_strong_wolfe`` with its objective calls turned into yields)."""
    g = g.clone(memory_format=torch.contiguous_format)
    f_new, g_new, gtd_new = yield t
    ls_func_evals = 1
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone(memory_format=torch.contiguous_format)], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone(memory_format=torch.contiguous_format)], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev = tmp, f_new
        g_prev, gtd_prev = g_new.clone(memory_format=torch.contiguous_format), gtd_new
        f_new, g_new, gtd_new = yield t
        ls_func_evals += 1
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new, gtd_new = yield t
        ls_func_evals += 1
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos] = g_new.clone(memory_format=torch.contiguous_format)
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos] = g_new.clone(memory_format=torch.contiguous_format)
            bracket_gtd[low_pos] = gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def strong_wolfe(
    closure: Closure,
    z: torch.Tensor,
    idx: torch.Tensor,
    start: torch.Tensor,
    t: torch.Tensor,
    d: torch.Tensor,
    f: torch.Tensor,
    g: torch.Tensor,
    gtd: torch.Tensor,
    budget: list[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every row's search at once: rows ``idx`` of ``z`` start at ``start`` along ``d``; ``closure(rows)`` evaluates
    ``z[rows]``. Returns each row's (loss, gradient, step, evaluations); ``z[idx]`` is left at ``start``."""
    cpu_t, cpu_gtd, cpu_dnorm = t.cpu(), gtd.cpu(), d.abs().amax(dim=-1).cpu()
    f_list = f.tolist()
    searches = [
        search(cpu_t[j], cpu_dnorm[j], f_list[j], g[j], cpu_gtd[j], max_ls=budget[j]) for j in range(idx.numel())
    ]
    steps: dict[int, Any] = {j: next(s) for j, s in enumerate(searches)}
    results: dict[int, tuple[float, torch.Tensor, Any, int]] = {}
    while steps:
        wait = sorted(steps)
        pos = torch.tensor(wait, device=idx.device)
        tries = torch.tensor([float(steps[j]) for j in wait], dtype=z.dtype, device=z.device)
        rows = idx[pos]
        z[rows] = start[pos] + tries[:, None] * d[pos]
        loss, grad = closure(rows)
        gtd_new = torch.linalg.vecdot(grad, d[pos]).cpu()
        losses = loss.detach().double().tolist()
        steps = {}
        for k, j in enumerate(wait):
            try:
                steps[j] = searches[j].send((losses[k], grad[k], gtd_new[k]))
            except StopIteration as done:
                results[j] = done.value
    z[idx] = start
    f_out = torch.tensor([float(results[j][0]) for j in range(idx.numel())], dtype=torch.float64, device=z.device)
    g_out = torch.stack([results[j][1] for j in range(idx.numel())])
    t_out = torch.tensor([float(results[j][2]) for j in range(idx.numel())], dtype=z.dtype, device=z.device)
    evals = torch.tensor([results[j][3] for j in range(idx.numel())], dtype=torch.long, device=z.device)
    return f_out, g_out, t_out, evals
