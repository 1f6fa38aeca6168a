"""CIFAR-10/100 read straight from the python-pickle archives on disk (no torchvision needed).

Looks for ``cifar-10-batches-py/data_batch_{1..5}`` or ``cifar-100-python/train``
under a root folder (the layout torchvision and the official tarballs unpack to).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

from hebench.data.presence import CIFAR_FOLDERS as FOLDERS


def load_cifar_tensors(name: str, root: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """(images (n, 3, 32, 32) in [0, 1], labels (n,)) of the training split."""
    folder = root / FOLDERS[name][0]
    files = [folder / f"data_batch_{i}" for i in range(1, 6)] if name == "cifar10" else [folder / "train"]
    xs, ys = [], []
    for f in files:
        with f.open("rb") as fh:
            batch = pickle.load(fh, encoding="latin1")
        xs.append(np.asarray(batch["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        ys.append(np.asarray(batch["labels" if name == "cifar10" else "fine_labels"], dtype=np.int64))
    x = torch.from_numpy(np.concatenate(xs)).float() / 255.0
    return x, torch.from_numpy(np.concatenate(ys))
