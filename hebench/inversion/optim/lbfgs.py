"""L-BFGS over the rows of a matrix: R independent ``torch.optim.LBFGS`` runs, advanced together.

Row r of ``z`` (R, n) is restart r's variables. Each row has its own history (a ring of at most
``history_size`` pairs), its own initial-Hessian scale, its own step size and its own stopping: within a
:meth:`BatchedLBFGS.step` a row that meets one of torch's tolerances stops while the others go on, and the
closure is asked only for the rows still moving. Row by row this is torch's algorithm (torch 2.x
``LBFGS.step``, same defaults: ``max_iter`` 20, ``max_eval`` 25, ``tolerance_grad`` 1e-7, ``tolerance_change``
1e-9, ``history_size`` 100, no line search): the same two-loop recursion, the same first step
``min(1, 1/|g|₁)·lr``, the same curvature test ``yᵀs > 1e-10``, in the variables' dtype. With
``line_search="strong-wolfe"`` each row runs torch's strong-Wolfe search on its own
(:mod:`hebench.inversion.optim.wolfe`).

Nothing mixes rows: every reduction is over a row's own coordinates, and masked rows are selected with
``torch.where`` (never multiplied by 0), so a row that turns NaN spoils only itself.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# closure(rows) -> (loss (m,), gradient (m, n)) at z[rows]
Closure = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


class BatchedLBFGS:
    """``torch.optim.LBFGS`` on every row of ``z`` at once, state per row; ``z`` is updated in place."""

    def __init__(
        self,
        z: torch.Tensor,
        lr: float = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search: str = "none",
    ) -> None:
        rows, n = z.shape
        self.z = z
        self.lr = lr
        self.max_iter = max_iter
        self.max_eval = max_eval if max_eval is not None else max_iter * 5 // 4
        self.tolerance_grad = tolerance_grad
        self.tolerance_change = tolerance_change
        self.history_size = history_size
        self.line_search = line_search
        dev, dtype = z.device, z.dtype
        self.n_iter = torch.zeros(rows, dtype=torch.long, device=dev)  # iterations so far (torch's state n_iter)
        self.func_evals = torch.zeros(rows, dtype=torch.long, device=dev)
        self.d = torch.zeros(rows, n, dtype=dtype, device=dev)  # the last direction
        self.t = torch.zeros(rows, dtype=dtype, device=dev)  # the last step size
        self.prev_g = torch.zeros(rows, n, dtype=dtype, device=dev)
        self.prev_loss = torch.zeros(rows, dtype=torch.float64, device=dev)
        self.h_diag = torch.ones(rows, dtype=dtype, device=dev)
        # the history: ring buffers, newest pair at slot (head - 1) mod H, ``count`` pairs valid
        self.old_stps = torch.zeros(rows, history_size, n, dtype=dtype, device=dev)  # s = t d
        self.old_dirs = torch.zeros(rows, history_size, n, dtype=dtype, device=dev)  # y = g' - g
        self.ro = torch.zeros(rows, history_size, dtype=dtype, device=dev)  # 1 / yᵀs
        self.head = torch.zeros(rows, dtype=torch.long, device=dev)
        self.count = torch.zeros(rows, dtype=torch.long, device=dev)

    @staticmethod
    def history_bytes(n: int, history_size: int = 100, itemsize: int = 4) -> int:
        """Memory one row's state takes (the history dominates)."""
        return (2 * history_size * n + 4 * n + 3 * history_size) * itemsize

    # -- the two-loop recursion, for the rows ``idx`` (restart ids) with gradients ``g`` ------------------------
    def _direction(self, idx: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        count, head = self.count[idx], self.head[idx]
        most = int(count.max()) if idx.numel() else 0
        q = g.neg()
        if most == 0:
            return q * self.h_diag[idx, None]
        steps = torch.arange(most, device=idx.device)
        lockstep = bool((count == most).all()) and bool((head == head[0]).all())
        everyone = idx.numel() == len(self.count) and bool((idx == torch.arange(len(idx), device=idx.device)).all())
        if lockstep and everyone:  # the common case: every row's k-th newest pair in one slot, read in place
            order = ((int(head[0]) - 1 - steps) % self.history_size).tolist()
            stps, dirs, ro = self.old_stps, self.old_dirs, self.ro
            valid = None
        else:  # one gather of each row's pairs, newest first
            slots = (head[:, None] - 1 - steps[None, :]) % self.history_size
            rows = idx[:, None]
            stps, dirs, ro = self.old_stps[rows, slots], self.old_dirs[rows, slots], self.ro[rows, slots]
            order = list(range(most))
            valid = None if lockstep else steps[None, :] < count[:, None]
        al = []
        for k, slot in enumerate(order):  # newest to oldest: torch's ``for i in range(num_old - 1, -1, -1)``
            s, y = stps[:, slot], dirs[:, slot]
            a = torch.linalg.vecdot(s, q) * ro[:, slot]
            if valid is None:  # the same arithmetic on both paths: a row's result never depends on its batch
                q = q - a[:, None] * y
            else:
                live = valid[:, k]
                a = torch.where(live, a, torch.zeros_like(a))
                q = torch.where(live[:, None], q - a[:, None] * y, q)
            al.append(a)
        r = q * self.h_diag[idx, None]
        for k in range(most - 1, -1, -1):  # oldest to newest
            slot = order[k]
            s, y = stps[:, slot], dirs[:, slot]
            be = torch.linalg.vecdot(y, r) * ro[:, slot]
            if valid is None:
                r = r + (al[k] - be)[:, None] * s
            else:
                r = torch.where(valid[:, k, None], r + (al[k] - be)[:, None] * s, r)
        return r

    def _remember(self, idx: torch.Tensor, g: torch.Tensor) -> None:
        """torch's memory update for rows past their first iteration: (s, y) kept where yᵀs > 1e-10."""
        y = g - self.prev_g[idx]
        s = self.d[idx] * self.t[idx, None]
        ys = torch.linalg.vecdot(y, s)
        keep = ys > 1e-10
        if not bool(keep.any()):
            return
        rows = idx[keep]
        slot = self.head[rows]
        self.old_dirs[rows, slot] = y[keep]
        self.old_stps[rows, slot] = s[keep]
        self.ro[rows, slot] = 1.0 / ys[keep]
        self.head[rows] = (slot + 1) % self.history_size
        self.count[rows] = torch.clamp(self.count[rows] + 1, max=self.history_size)
        self.h_diag[rows] = ys[keep] / torch.linalg.vecdot(y[keep], y[keep])

    def step(self, closure: Closure, rows: torch.Tensor) -> torch.Tensor:
        """One ``LBFGS.step`` for each row in ``rows``; returns the loss each had at its start (torch's
        ``orig_loss``)."""
        loss, g = closure(rows)
        orig_loss = loss.detach().clone()
        loss64 = loss.detach().double()
        self.func_evals[rows] += 1
        evals = torch.ones(rows.numel(), dtype=torch.long, device=rows.device)
        going = ~(g.abs().amax(dim=-1) <= self.tolerance_grad)  # torch returns at once where opt_cond holds
        g = g.clone()
        local_iter = 0
        while local_iter < self.max_iter and bool(going.any()):
            local_iter += 1
            pos = going.nonzero().squeeze(1)
            idx = rows[pos]
            gi = g[pos]
            self.n_iter[idx] += 1
            first = self.n_iter[idx] == 1
            if bool(first.any()):  # a row's very first iteration: steepest descent, empty history
                fresh = idx[first]
                self.count[fresh] = 0
                self.head[fresh] = 0
                self.h_diag[fresh] = 1.0
            later = ~first
            d = gi.neg()
            if bool(later.any()):
                self._remember(idx[later], gi[later])
                d[later] = self._direction(idx[later], gi[later])
            self.prev_g[idx] = gi
            self.prev_loss[idx] = loss64[pos]
            inv = 1.0 / gi.abs().sum(dim=-1)
            t_first = torch.where(inv < 1.0, inv, torch.ones_like(inv)) * self.lr
            t = torch.where(first, t_first, torch.full_like(inv, self.lr))
            self.d[idx] = d
            self.t[idx] = t
            gtd = torch.linalg.vecdot(gi, d)
            moving = ~(gtd > -self.tolerance_change)  # torch breaks before moving where this fails
            going[pos[~moving]] = False
            if not bool(moving.any()):
                continue
            mpos, midx = pos[moving], idx[moving]
            md, mt = d[moving], t[moving]
            ls_evals = torch.zeros(mpos.numel(), dtype=torch.long, device=rows.device)
            if self.line_search == "strong-wolfe":
                from hebench.inversion.optim.wolfe import strong_wolfe

                start = self.z[midx].clone()
                budget = (self.max_eval - evals[mpos]).tolist()
                f_new, g_new, mt, ls_evals = strong_wolfe(
                    closure, self.z, midx, start, mt, md, loss64[mpos], gi[moving], gtd[moving], budget
                )
                self.t[midx] = mt
                self.z[midx] = start + mt[:, None] * md
                loss64[mpos] = f_new
                g[mpos] = g_new
                stop_now = g_new.abs().amax(dim=-1) <= self.tolerance_grad
            else:
                self.z[midx] = self.z[midx] + mt[:, None] * md
                stop_now = torch.zeros(mpos.numel(), dtype=torch.bool, device=rows.device)
                if local_iter != self.max_iter:  # torch re-evaluates except after its last iteration
                    f_new, g_new = closure(midx)
                    loss64[mpos] = f_new.detach().double()
                    g[mpos] = g_new
                    stop_now = g_new.abs().amax(dim=-1) <= self.tolerance_grad
                    ls_evals = torch.ones_like(ls_evals)
            evals[mpos] += ls_evals
            self.func_evals[midx] += ls_evals
            if local_iter == self.max_iter:
                going[mpos] = False
                continue
            stop_now |= evals[mpos] >= self.max_eval
            stop_now |= (md * mt[:, None]).abs().amax(dim=-1) <= self.tolerance_change
            stop_now |= (loss64[mpos] - self.prev_loss[midx]).abs() < self.tolerance_change
            going[mpos[stop_now]] = False
        return orig_loss
