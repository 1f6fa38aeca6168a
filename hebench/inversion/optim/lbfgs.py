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

Nothing mixes rows: every operation is row by row (every reduction over a row's own coordinates), so a row that
turns NaN spoils only itself; a row's unused history slots hold zeros, exact no-ops in its two-loop recursion.
The recursion reads the history in place where every row's k-th pair lies in one slot and otherwise gathers it one
pair at a time, never the whole history at once (on the CPU it is bound by memory bandwidth: each iteration reads
every row's pairs twice).
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
        # every row's slot j, as views made once (the history changes in place, so they stay current)
        self.slots = tuple(zip(self.old_stps.unbind(1), self.old_dirs.unbind(1), self.ro.unbind(1), strict=True))

    @staticmethod
    def history_bytes(n: int, history_size: int = 100, itemsize: int = 4) -> int:
        """Memory one row's state takes (the history dominates)."""
        return (2 * history_size * n + 4 * n + 3 * history_size) * itemsize

    # -- the two-loop recursion, for the rows ``idx`` (restart ids) with gradients ``g`` ------------------------
    def _direction(self, idx: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """torch's two-loop recursion, row by row. A row's slots beyond its ``count`` newest pairs were never written
        (zeros, ``ρ`` 0), so where rows hold different numbers of pairs a shorter row's extra pairs are exact no-ops
        (``a = 0``, ``q - 0·y = q``): every row runs the same arithmetic whatever its batch, with no masks."""
        count, head = self.count[idx], self.head[idx]
        most = int(count.max()) if idx.numel() else 0
        if most == 0:
            return g.neg() * self.h_diag[idx, None]
        pairs, whole = self._pairs(idx, count, head, most)
        q = g.new_zeros(len(self.count), g.shape[1]).index_copy_(0, idx, g).neg_() if whole else g.neg()
        h_diag = self.h_diag[:, None] if whole else self.h_diag[idx, None]
        tmp = torch.empty_like(q)
        al = []
        for k in range(most):  # newest to oldest: torch's ``for i in range(num_old - 1, -1, -1)``
            s, y, ro = pairs(k)
            a = torch.linalg.vecdot(s, q).mul_(ro)
            q.sub_(torch.mul(y, a.unsqueeze(1), out=tmp))  # q - a y
            al.append(a)
        r = q.mul_(h_diag)
        for k in range(most - 1, -1, -1):  # oldest to newest
            s, y, ro = pairs(k)
            be = torch.linalg.vecdot(y, r).mul_(ro)
            r.add_(torch.mul(s, (al[k] - be).unsqueeze(1), out=tmp))  # r + (a - b) s
        return r[idx] if whole else r

    def _pairs(
        self, idx: torch.Tensor, count: torch.Tensor, head: torch.Tensor, most: int
    ) -> tuple[Callable[[int], tuple[torch.Tensor, torch.Tensor, torch.Tensor]], bool]:
        """``pairs(k)``: the k-th (s, y, ρ) each row takes, newest first; and whether they are every row's of the
        batch (else the rows ``idx``'s). Where every row's k-th pair lies in one slot (no ring has wrapped: row r's
        pairs fill slots ``count_r - 1 … 0``, newest first, zeros above; or every ring stands at one position), that
        slot of every row of the batch, read in place (the rows not asked for are computed and dropped when they
        are fewer than half); else each row's pair, gathered slot by slot into a buffer that stays in cache."""
        size, n = self.history_size, self.old_stps.shape[-1]
        batch = len(self.count)
        unwrapped = bool((count < size).all())
        if unwrapped or bool((head == head[0]).all()):
            newest = most - 1 if unwrapped else int(head[0]) - 1
            slots = [(newest - k) % size for k in range(most)]
            everyone = idx.numel() == batch and bool((idx == torch.arange(batch, device=idx.device)).all())
            if everyone or 2 * idx.numel() >= batch:
                return [self.slots[j] for j in slots].__getitem__, not everyone
            where = idx[None, :] * size + torch.tensor(slots, device=idx.device)[:, None]  # (most, rows)
        else:
            steps = torch.arange(most, device=idx.device)
            where = idx[None, :] * size + (head[None, :] - 1 - steps[:, None]) % size
        stps, dirs = self.old_stps.view(-1, n), self.old_dirs.view(-1, n)
        ro_rows = self.ro.view(-1)[where]
        s_buf, y_buf = stps.new_empty(idx.numel(), n), dirs.new_empty(idx.numel(), n)

        def gathered(k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            at = where[k]
            return torch.index_select(stps, 0, at, out=s_buf), torch.index_select(dirs, 0, at, out=y_buf), ro_rows[k]

        return gathered, False

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
            if bool(later.all()):  # past their first iteration, every one: no copies of the rows
                self._remember(idx, gi)
                d = self._direction(idx, gi)
            else:
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
