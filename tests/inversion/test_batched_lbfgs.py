"""Batched L-BFGS is torch's L-BFGS row by row: each restart of a batch follows the iterates
``torch.optim.LBFGS`` gives it alone (same defaults, same line search), stops on its own, and a restart that
turns NaN spoils none of the others."""

from __future__ import annotations

import math

import pytest
import torch

from hebench.inversion.optim.lbfgs import BatchedLBFGS

R, N = 5, 6


def _problem(z: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Per-row losses of a scaled Rosenbrock valley with a sine ripple (non-convex, curved)."""
    a, b = z[..., :-1], z[..., 1:]
    return (scale.unsqueeze(-1) * (b - a**2) ** 2 + (1 - a) ** 2 + 0.1 * torch.sin(3 * (a - 1)) ** 2).sum(-1)


def _starts(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return torch.randn(R, N, generator=gen, dtype=dtype) * 1.5, torch.linspace(1.0, 8.0, R, dtype=dtype)


def _serial(z0: torch.Tensor, scale: float, steps: int, **options) -> list[torch.Tensor]:
    z = z0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([z], **options)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = _problem(z, torch.tensor(scale, dtype=z.dtype))
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        opt.step(closure)
        out.append(z.detach().clone())
    return out


def _batched(z0: torch.Tensor, scale: torch.Tensor, steps: int, **options) -> tuple[list[torch.Tensor], BatchedLBFGS]:
    z = z0.clone()
    opt = BatchedLBFGS(z, **options)

    def closure(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        zr = z[rows].clone().requires_grad_(True)
        loss = _problem(zr, scale[rows])
        (grad,) = torch.autograd.grad(loss.sum(), zr)
        return loss.detach(), grad

    everyone = torch.arange(len(z))
    out = []
    for _ in range(steps):
        opt.step(closure, everyone)
        out.append(z.clone())
    return out, opt


@pytest.mark.parametrize(
    "options",
    [
        {"lr": 1.0},  # DLG's: torch's defaults, no line search
        {"lr": 0.5, "history_size": 3, "max_iter": 7},  # the ring of pairs wraps
        {"lr": 1.0, "line_search_fn": "strong_wolfe"},
    ],
)
def test_each_row_follows_torchs_lbfgs_run_alone(options):
    z0, scale = _starts(torch.float64)
    batched_options = {k: v for k, v in options.items() if k != "line_search_fn"}
    if "line_search_fn" in options:
        batched_options["line_search"] = "strong-wolfe"
    got, opt = _batched(z0, scale, 6, **batched_options)
    for r in range(R):
        want = _serial(z0[r : r + 1], float(scale[r]), 6, **options)
        for step, (w, g) in enumerate(zip(want, got, strict=True)):
            assert torch.allclose(g[r : r + 1], w, rtol=1e-7, atol=1e-8), (r, step, options)
    assert int(opt.func_evals.min()) > 6  # every row took inner iterations, not one evaluation a step


def test_float32_rows_stay_within_float_tolerance_of_torch():
    z0, scale = _starts(torch.float32)
    got, _ = _batched(z0, scale, 3, lr=1.0)
    for r in range(R):
        want = _serial(z0[r : r + 1], float(scale[r]), 3, lr=1.0)
        assert torch.allclose(got[-1][r : r + 1], want[-1], rtol=1e-4, atol=1e-5), r


def test_a_row_that_meets_a_tolerance_stops_while_the_others_go_on():
    z0, _ = _starts(torch.float64)
    z0[2] = 1.0  # the minimum: gradient 0, so torch's step returns at once (tolerance_grad)
    got, opt = _batched(z0, torch.full((R,), 10.0, dtype=torch.float64), 4, lr=1.0)
    want = _serial(z0[0:1], 10.0, 4, lr=1.0)
    assert torch.allclose(got[-1][0:1], want[-1], rtol=1e-7, atol=1e-8)
    assert int(opt.func_evals[2]) == 4 and int(opt.func_evals[0]) > 4 and torch.equal(got[-1][2], z0[2])


def test_a_row_that_turns_nan_spoils_no_other_row():
    z0, scale = _starts(torch.float64)
    poisoned = scale.clone()
    poisoned[1] = math.nan
    clean, _ = _batched(z0, scale, 4, lr=1.0)
    dirty, _ = _batched(z0, poisoned, 4, lr=1.0)
    assert torch.isnan(dirty[-1][1]).all()
    others = [0, 2, 3, 4]
    assert torch.equal(dirty[-1][others], clean[-1][others])


def _two_loop(pairs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], g: torch.Tensor, h_diag: torch.Tensor):
    """torch's ``LBFGS.step`` direction for one row, its pairs oldest first."""
    al = [torch.zeros(())] * len(pairs)
    q = g.neg()
    for i in range(len(pairs) - 1, -1, -1):
        s, y, ro = pairs[i]
        al[i] = s.dot(q) * ro
        q.add_(y, alpha=-al[i])
    r = q * h_diag
    for i, (s, y, ro) in enumerate(pairs):
        r.add_(s, alpha=al[i] - y.dot(r) * ro)
    return r


@pytest.mark.parametrize(
    "rows",
    [
        [0, 1, 2],  # no ring wrapped, different counts: slots read in place, the other rows computed and dropped
        [1],  # one row: its slots gathered
        [1, 4, 5],  # rings at one position, one of them not full
        [4, 5],  # full rings at one position, fewer than half the rows
        [1, 4, 5, 3],  # rings at different positions: each row's pairs gathered
        [0, 1, 2, 3, 4, 5],
    ],
)
def test_each_rows_direction_is_its_own_two_loop_recursion_whatever_the_others_history(rows):
    # Arrange: rows that kept 0, 2, 3, 4, 6 and 10 pairs in rings of 4 (wrapped to different positions)
    size, n = 4, 7
    gen = torch.Generator().manual_seed(1)
    opt = BatchedLBFGS(torch.zeros(6, n, dtype=torch.float64), history_size=size)
    kept: list[list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = []
    for r, pushes in enumerate([0, 2, 3, 4, 6, 10]):
        for _ in range(pushes):
            s, y = torch.randn(2, n, generator=gen, dtype=torch.float64)
            slot = int(opt.head[r])
            opt.old_stps[r, slot], opt.old_dirs[r, slot], opt.ro[r, slot] = s, y, 1.0 / y.dot(s)
            opt.head[r], opt.count[r] = (slot + 1) % size, min(int(opt.count[r]) + 1, size)
        opt.h_diag[r] = 0.5 + r
        order = range(pushes) if pushes < size else range(pushes - size, pushes)
        kept.append(
            [(opt.old_stps[r, i % size].clone(), opt.old_dirs[r, i % size].clone(), opt.ro[r, i % size]) for i in order]
        )
    g = torch.randn(len(rows), n, generator=gen, dtype=torch.float64)
    # Act
    got = opt._direction(torch.tensor(rows), g)
    # Assert
    for j, r in enumerate(rows):
        want = _two_loop(kept[r], g[j], opt.h_diag[r])
        assert torch.allclose(got[j], want, rtol=1e-12, atol=1e-12), (rows, r)
