"""Load a suite's dataset as per-client shards, and say which datasets are present."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from hebench.config import DataSpec
from hebench.data.cache import cache_dir, femnist_sample
from hebench.data.federated import ClientData, FederatedData
from hebench.data.fetch import resolve
from hebench.data.presence import CIFAR_FOLDERS as FOLDERS
from hebench.data.presence import TORCHVISION_SETS, find_cifar
from hebench.data.splits import partition
from hebench.errors import DatasetError


def _centralised(spec: DataSpec, seed: int, x: torch.Tensor, y: torch.Tensor, name: str, classes: int) -> FederatedData:
    """Hold out a seeded test split, then partition the rest across clients."""
    rng = np.random.default_rng(seed)
    order = torch.as_tensor(rng.permutation(len(y)))
    cut = int(len(y) * spec.test_fraction)
    test, train = order[:cut], order[cut:]
    clients = partition(
        x[train],
        y[train],
        spec.clients,
        split=spec.split,
        alpha=spec.alpha,
        seed=seed,
        min_per_client=spec.min_per_client,
    )
    if spec.images_per_client:
        clients = tuple(
            ClientData(c.client_id, c.x[: spec.images_per_client], c.y[: spec.images_per_client]) for c in clients
        )
    return FederatedData(name, clients, x[test], y[test], classes)


def _digits(spec: DataSpec, seed: int) -> FederatedData:
    from hebench.data.digits import load_digits_tensors

    x, y = load_digits_tensors()
    return _centralised(spec, seed, x, y, "digits", 10)


def _natural(spec: DataSpec, seed: int) -> FederatedData:
    from hebench.data.natural import CLASSES, load_natural_tensors

    x, y = load_natural_tensors()
    return _centralised(spec, seed, x, y, "natural", CLASSES)


def _tokens(spec: DataSpec, seed: int) -> FederatedData:
    from hebench.data.tokens import CLASSES, load_token_tensors

    x, y = load_token_tensors(seed=seed)
    return _centralised(spec, seed, x, y, "tokens", CLASSES)


def _femnist(spec: DataSpec, seed: int) -> FederatedData:
    from hebench.data.leaf import read_split

    root = femnist_sample() if spec.sample else resolve("femnist", Path(spec.path) if spec.path else None)
    if root is None:
        raise DatasetError(
            "FEMNIST is not in the cache",
            "run `hebench datasets fetch femnist` (or --path DIR for a local LEAF/TFF copy), set data.path,"
            " or use the shipped sample: --set data.sample=true",
        )
    train, test = read_split(root, "train"), read_split(root, "test")
    writers = sorted(set(train) & set(test))
    if spec.clients == "all":  # LEAF: every writer is a client; training.clients_per_round samples them
        chosen = writers
    elif len(writers) < spec.clients:
        raise DatasetError(
            f"FEMNIST at {root} has {len(writers)} writers with train and test data; the suite asks for {spec.clients}",
            "lower data.clients, or set data.clients: all",
        )
    else:
        picks = np.random.default_rng(seed).choice(len(writers), spec.clients, replace=False)
        chosen = [writers[i] for i in sorted(picks)]
    cap = spec.images_per_client
    clients = tuple(ClientData(w, train[w][0][:cap], train[w][1][:cap]) for w in chosen)
    test_x = torch.cat([test[w][0] for w in chosen])
    test_y = torch.cat([test[w][1] for w in chosen])
    return FederatedData("femnist", clients, test_x, test_y, 62)


_TORCHVISION = TORCHVISION_SETS


def _torchvision(name: str) -> Callable[[DataSpec, int], FederatedData]:
    def load(spec: DataSpec, seed: int) -> FederatedData:
        if name in FOLDERS:  # CIFAR unpacked on disk: read the pickles, torchvision or not
            from hebench.data.cifar import load_cifar_tensors

            root = Path(spec.path) if spec.path else cache_dir() / "torchvision"
            if find_cifar(name, root) is not None:
                x, y = load_cifar_tensors(name, root)
                return _centralised(spec, seed, x, y, name, FOLDERS[name][1])
        try:
            import torchvision
        except Exception as err:  # PyPI's torchvision links CUDA libraries absent beside CPU torch
            raise DatasetError(
                f"{name} is loaded through torchvision, which cannot be imported here: {err}",
                "install a torchvision build that matches your torch (`pip show torch`), or use digits / femnist",
            ) from None
        cls_name, classes, extra = _TORCHVISION[name]
        root = Path(spec.path) if spec.path else cache_dir() / "torchvision"
        try:
            ds = getattr(torchvision.datasets, cls_name)(str(root), train=True, download=spec.download, **extra)
        except RuntimeError as err:
            raise DatasetError(
                f"{name} is not present under {root}: {err}",
                f"set data.download: true where the network allows, or data.path to a folder holding {cls_name}",
            ) from None
        data = ds.data if isinstance(ds.data, torch.Tensor) else torch.as_tensor(np.asarray(ds.data))
        x = (data.permute(0, 3, 1, 2) if data.ndim == 4 else data.unsqueeze(1)).float() / 255.0
        return _centralised(spec, seed, x, torch.as_tensor(np.asarray(ds.targets)), name, classes)

    return load


LOADERS: dict[str, Callable[[DataSpec, int], FederatedData]] = {
    "digits": _digits,
    "natural": _natural,
    "tokens": _tokens,
    "femnist": _femnist,
    **{name: _torchvision(name) for name in _TORCHVISION},
}


def load_federated(spec: DataSpec, seed: int) -> FederatedData:
    return LOADERS[spec.dataset](spec, seed)
