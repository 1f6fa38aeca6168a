"""The first layer's test of every vocabulary entry at every position, without building the V x L inputs.

Token ``t`` at position ``p`` enters the first layer as ``a = g * (c_t + q_p) / sigma + b`` (LayerNorm: ``c_t``,
``q_p`` the centred token and position embeddings, ``sigma^2 = |c_t + q_p|^2 / d + eps``), mapped by ``M`` when the
rows live in an adapter's coordinates (``z = M a``; else ``z = a``). With ``U`` the span's orthonormal basis,
the squared distance is ``|z|^2 - |U z|^2``, and both norms expand into products of per-token and per-position
terms: ``x_t = W c_t``, ``y_p = W q_p`` (``W = M diag(g)``), their projections ``U x_t``, ``U y_p``, and
``V x L`` inner products. The cost is one ``V x d x k`` product (the vocabulary through the basis) and a few
``V x d x L`` ones, where the direct test costs ``V x L x d x k``: for GPT-2 small (V = 50,257, L = 32,
d = 768) about 30 GFLOP instead of 950. Float64 throughout; the vocabulary in chunks.
"""

from __future__ import annotations

import torch

from hebench.inversion.text.anatomy import FirstInputs
from hebench.inversion.text.span import Span

CHUNK = 8192  # vocabulary entries per chunk (V x d float64: 50 MB at d = 768)


def _centred(v: torch.Tensor) -> torch.Tensor:
    return v - v.mean(dim=-1, keepdim=True)


def token_distances(
    inputs: FirstInputs, span: Span, length: int, coords: torch.Tensor | None = None, chunk: int = CHUNK
) -> torch.Tensor:
    """Relative distance of every token at every position ``0..length-1`` to the span: (length, V), float64."""
    dev = span.basis.device
    f64 = torch.float64
    g, b = inputs.weight.to(dev, f64), inputs.bias.to(dev, f64)
    d = g.shape[0]
    m = None if coords is None else coords.to(dev, f64)
    w = torch.diag(g) if m is None else m * g  # (mdim, d): z = W c / sigma + M b
    shift = b if m is None else m @ b
    basis = span.basis.to(dev, f64)
    uw = basis @ w  # (k, d)
    ub = basis @ shift

    q = _centred(inputs.positions[:length].to(dev, f64))  # (L, d)
    y, uy = q @ w.T, q @ uw.T
    qq = (q * q).sum(-1)  # (L,)
    yy, yb, uyy, uyb = (y * y).sum(-1), y @ shift, (uy * uy).sum(-1), uy @ ub
    bb, ubb = float(shift @ shift), float(ub @ ub)

    out = []
    for start in range(0, inputs.tokens.shape[0], chunk):
        c = _centred(inputs.tokens[start : start + chunk].to(dev, f64))  # (n, d)
        x, ux = c @ w.T, c @ uw.T
        sigma2 = ((c * c).sum(-1, keepdim=True) + 2 * c @ q.T + qq) / d + inputs.eps  # (n, L)
        sigma = sigma2.sqrt()
        xx = (x * x).sum(-1, keepdim=True) + 2 * x @ y.T + yy  # |x + y|^2
        xb = (x @ shift).unsqueeze(-1) + yb
        uxx = (ux * ux).sum(-1, keepdim=True) + 2 * ux @ uy.T + uyy
        uxb = (ux @ ub).unsqueeze(-1) + uyb
        zz = xx / sigma2 + 2 * xb / sigma + bb
        uu = uxx / sigma2 + 2 * uxb / sigma + ubb
        out.append(((zz - uu).clamp_min(0.0) / zz.clamp_min(torch.finfo(f64).tiny)).sqrt())
    return torch.cat(out).T.contiguous()
