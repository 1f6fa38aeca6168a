"""FEMNIST readers: LEAF's preprocessed JSON and TensorFlow Federated's fed_emnist h5.

LEAF JSON: ``{"users": [...], "num_samples": [...], "user_data": {uid: {"x": [[784]], "y": [..]}}}``
with x in [0, 1], white background (1.0), upright 28x28, labels 0-61.
TFF h5: ``examples/<client_id>/pixels`` (n, 28, 28) and ``examples/<client_id>/label`` (n,).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from hebench.errors import DatasetError

Writers = dict[str, tuple[torch.Tensor, torch.Tensor]]


def _as_tensors(x: np.ndarray, y: np.ndarray, where: str) -> tuple[torch.Tensor, torch.Tensor]:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 2 and x.shape[1] == 784:
        x = x.reshape(-1, 28, 28)
    if x.ndim != 3 or x.shape[1:] != (28, 28):
        raise DatasetError(f"{where}: images have shape {x.shape}, expected (n, 784) or (n, 28, 28)", "check the file")
    if len(x) != len(y):
        raise DatasetError(f"{where}: {len(x)} images but {len(y)} labels", "the file is damaged; fetch it again")
    return torch.from_numpy(x).unsqueeze(1), torch.as_tensor(np.asarray(y, dtype=np.int64).ravel())


def read_leaf_json(paths: list[Path]) -> Writers:
    """Merge LEAF JSON files (a folder's ``*.json`` or single files) into writers."""
    writers: Writers = {}
    for path in paths:
        try:
            doc = json.loads(path.read_text())
            users = doc["users"]
            data = doc["user_data"]
        except (OSError, json.JSONDecodeError, KeyError) as err:
            raise DatasetError(f"{path} is not LEAF JSON: {err}", "pass a LEAF train/ or test/ folder") from None
        for uid in users:
            writers[uid] = _as_tensors(data[uid]["x"], data[uid]["y"], f"{path}:{uid}")
    return writers


def read_tff_h5(path: Path) -> Writers:
    """Read a TFF fed_emnist h5 file (needs h5py)."""
    try:
        import h5py
    except ImportError:
        raise DatasetError("reading TFF h5 files needs h5py", "pip install h5py") from None
    writers: Writers = {}
    try:
        with h5py.File(path, "r") as fh:
            for uid, group in fh["examples"].items():
                writers[uid] = _as_tensors(group["pixels"][()], group["label"][()], f"{path}:{uid}")
    except (OSError, KeyError) as err:
        raise DatasetError(f"{path} is not a TFF fed_emnist h5 file: {err}", "fetch it again") from None
    return writers


def read_split(root: Path, split: str) -> Writers:
    """Writers of ``split`` (train/test) under ``root``: LEAF ``split/*.json`` or TFF ``*_split.h5``."""
    leaf = sorted((root / split).glob("*.json")) if (root / split).is_dir() else []
    if leaf:
        return read_leaf_json(leaf)
    h5 = sorted(root.glob(f"*_{split}.h5"))
    if h5:
        return read_tff_h5(h5[0])
    raise DatasetError(
        f"no FEMNIST {split} data under {root} (looked for {split}/*.json and *_{split}.h5)",
        "run `hebench datasets fetch femnist`, or pass data.path pointing at a LEAF or TFF copy",
    )
