"""Trap weights ("Robbing the Fed", Fowl, Geiping et al., ICLR 2022): a malicious server's imprint block.

The server puts a linear layer of K rows, each followed by a ReLU, in front of the
model it sends. Every row computes the same image statistic ``h(x)`` (the mean
brightness, or a fixed random projection) minus its own threshold ``t_i``; the
thresholds are K equal-mass quantiles of ``h`` over the server's public data, so
row i fires for every image with ``h(x) > t_i`` (cumulative bins). The rows'
outputs are averaged and added to every pixel, so the model behind still sees the
image (shifted) and every row passes the same derivative ``g(x)`` back.

For one image ``dL/dW_i = g(x)·x`` and ``dL/db_i = g(x)`` on every row that fires.
Two neighbouring rows differ only by the images whose statistic falls between
their thresholds, so ``(dW_i - dW_i+1) / (db_i - db_i+1)`` is that image, exactly,
when it is alone in its bin (a weighted mixture when several share it). The same
holds for a sum of gradients (a batch, a FedAvg aggregate, E local steps) as long
as no image changes bin between steps; the rows are scaled up by ``gain`` (and
their sum down by as much, so the forward pass is unchanged), which makes each
local step move the thresholds ``gain``² less. Batching is no defence: more images only
make shared bins likelier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from hebench.errors import ParameterError

STATISTICS = ("mean", "random")


@dataclass(frozen=True)
class ImprintSpec:
    """What the malicious server plants: ``bins`` rows over ``statistic``, thresholds from its public data."""

    bins: int = 64
    statistic: str = "random"  # random (a seeded unit random projection) | mean (brightness)
    seed: int = 0  # the random projection's seed
    gain: float = 10.0  # rows scaled up by ``gain``, their sum down: the same forward, ``gain``² less drift per step

    def check(self) -> None:
        if self.bins < 2:
            raise ParameterError(f"an imprint block needs at least 2 bins, not {self.bins}", "set imprint.bins >= 2")
        if not self.gain > 0:
            raise ParameterError(f"imprint gain must be positive, not {self.gain}", "set imprint.gain > 0 (e.g. 10)")
        if self.statistic not in STATISTICS:
            raise ParameterError(
                f"imprint statistic '{self.statistic}' is unknown", f"use one of {', '.join(STATISTICS)}"
            )


def statistic_weights(spec: ImprintSpec, size: int) -> torch.Tensor:
    """The linear functional ``h(x) = w · x`` over a flattened image of ``size`` values."""
    if spec.statistic == "mean":
        return torch.full((size,), 1.0 / size)
    gen = torch.Generator().manual_seed(spec.seed)
    w = torch.randn(size, generator=gen)
    return w / w.norm()


def thresholds(values: torch.Tensor, bins: int) -> torch.Tensor:
    """``bins`` increasing thresholds splitting a normal fitted to ``values`` into equal masses.

    The first row's threshold is 10 standard deviations below the mean: it fires for every image."""
    if values.numel() < 2:
        raise ParameterError(
            f"the server estimates its bins from {values.numel()} public image(s)",
            "give the imprint at least 2 public images (the dataset's test split)",
        )
    mu, sigma = float(values.mean()), float(values.std())
    normal = torch.distributions.Normal(mu, max(sigma, 1e-6))
    inner = normal.icdf(torch.arange(1, bins, dtype=torch.float64) / bins).float()
    return torch.cat([torch.tensor([mu - 10 * max(sigma, 1e-6)]), inner])


class ImprintBlock(nn.Module):
    """K ReLU rows over one linear statistic, cumulative bins; adds the rows' mean to every pixel."""

    def __init__(
        self, input_shape: tuple[int, int, int], weights: torch.Tensor, cuts: torch.Tensor, gain: float = 1.0
    ) -> None:
        super().__init__()
        self.input_shape = input_shape
        self.gain = gain
        self.linear = nn.Linear(weights.numel(), len(cuts))
        with torch.no_grad():
            self.linear.weight.copy_(gain * weights.expand(len(cuts), -1))
            self.linear.bias.copy_(-gain * cuts)
        self.register_buffer("cuts", cuts.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = torch.relu(self.linear(x.flatten(1)))
        return x + rows.mean(dim=1).view(-1, 1, 1, 1) / self.gain


class ImprintedModel(nn.Module):
    """The model a malicious server sends: its imprint block, then the honest model unchanged."""

    def __init__(self, imprint: ImprintBlock, honest: nn.Module) -> None:
        super().__init__()
        self.imprint = imprint
        self.honest = honest

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.honest(self.imprint(x))


def plant_imprint(
    model: nn.Module, input_shape: tuple[int, int, int], public: torch.Tensor, spec: ImprintSpec
) -> ImprintedModel:
    """The malicious model: ``spec.bins`` rows at the input, thresholds from the statistic over ``public`` images."""
    spec.check()
    size = math.prod(input_shape)
    weights = statistic_weights(spec, size)
    cuts = thresholds(public.flatten(1).float() @ weights, spec.bins)
    return ImprintedModel(ImprintBlock(input_shape, weights, cuts, spec.gain), model).eval()


def find_imprint(model: nn.Module) -> ImprintBlock | None:
    return model.imprint if isinstance(model, ImprintedModel) else None


def read_out(
    model: nn.Module, gradients: tuple[torch.Tensor, ...], images: int, rel_tol: float = 1e-5
) -> tuple[torch.Tensor, int]:
    """Images from an upload of the imprinted model: (``images`` reconstructions in [0, 1], bins that held data).

    ``gradients`` are in ``model.parameters()`` order (the block's weight and bias first). Bins whose
    difference in bias gradient is below ``rel_tol`` of the largest are empty; if more bins than images
    hold data (drift over local steps), the ``images`` with the largest mass are kept; missing images are
    the prior (mid-grey).
    """
    block = find_imprint(model)
    if block is None:
        raise ParameterError(
            "the imprint read-out needs the model the malicious server sent (an imprint block at its input)",
            "run the 'imprint' recipe through an attack plan, which plants the block before the victim trains",
        )
    grad_w, grad_b = gradients[0].double(), gradients[1].double()
    diff_w = grad_w - torch.cat([grad_w[1:], torch.zeros_like(grad_w[:1])])
    diff_b = grad_b - torch.cat([grad_b[1:], torch.zeros_like(grad_b[:1])])
    mass = diff_b.abs()
    hit = mass > rel_tol * float(mass.max()) if float(mass.max()) > 0 else torch.zeros_like(mass, dtype=torch.bool)
    order = [int(i) for i in torch.argsort(mass, descending=True) if hit[i]][:images]
    out = torch.full((images, *block.input_shape), 0.5)
    for k, i in enumerate(order):
        out[k] = (diff_w[i] / diff_b[i]).float().view(block.input_shape)
    return out.clamp(0, 1), sum(bool(h) for h in hit)
