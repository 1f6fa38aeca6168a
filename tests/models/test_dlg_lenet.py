"""DLG's RGB LeNet: the CIFAR-100 network of mit-han-lab/dlg, with its initialisation."""

from __future__ import annotations

import torch

from hebench.models import build_model, parameter_count
from hebench.models.lenet import dlg_init


def test_rgb_lenet_is_dlgs_cifar100_network():
    model = build_model("lenet", (3, 32, 32), 100)
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes == [(12, 3, 5, 5), (12,), (12, 12, 5, 5), (12,), (12, 12, 5, 5), (12,), (100, 768), (100,)]
    assert parameter_count(model) == 85_036
    assert all(isinstance(m, torch.nn.Sigmoid) for m in model.body if not isinstance(m, torch.nn.Conv2d))


def test_dlg_init_draws_every_parameter_from_the_half_unit_box():
    torch.manual_seed(0)
    model = dlg_init(build_model("lenet", (3, 32, 32), 100))
    values = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert float(values.min()) >= -0.5 and float(values.max()) <= 0.5 and float(values.std()) > 0.25
