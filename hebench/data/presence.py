"""Which datasets are on this machine, and how to get the others (no torch: ``hebench datasets list`` stays fast)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hebench.data.cache import FEMNIST_SAMPLE, SHAKESPEARE_SAMPLE, cache_dir
from hebench.data.fetch import resolve

# torchvision sets: name -> (torchvision class, classes, extra constructor arguments)
TORCHVISION_SETS: dict[str, tuple[str, int, dict[str, Any]]] = {
    "mnist": ("MNIST", 10, {}),
    "emnist": ("EMNIST", 62, {"split": "byclass"}),
    "cifar10": ("CIFAR10", 10, {}),
    "cifar100": ("CIFAR100", 100, {}),
}
# CIFAR unpacked on disk (read without torchvision): name -> (folder, classes)
CIFAR_FOLDERS = {"cifar10": ("cifar-10-batches-py", 10), "cifar100": ("cifar-100-python", 100)}


def find_cifar(name: str, root: Path) -> Path | None:
    """The unpacked CIFAR folder of ``name`` under ``root``, if there."""
    folder = root / CIFAR_FOLDERS[name][0]
    return folder if folder.is_dir() else None


@dataclass(frozen=True)
class DatasetStatus:
    name: str
    present: bool
    where: str
    how: str


def list_datasets() -> list[DatasetStatus]:
    """Every dataset hebench reads: whether it is present, where, and how to get it."""
    out = [
        DatasetStatus("digits", True, "bundled with scikit-learn", "nothing to do"),
        DatasetStatus("natural", True, "scikit-learn's sample photographs (32x32 patches)", "nothing to do"),
        DatasetStatus("tokens", True, "generated (seeded token sequences, for text encoders: cost only)", "nothing"),
    ]
    femnist = resolve("femnist")
    out.append(
        DatasetStatus(
            "femnist",
            femnist is not None,
            str(femnist or cache_dir() / "femnist"),
            "hebench datasets fetch femnist   (or --path DIR for a local LEAF/TFF copy)",
        )
    )
    out.append(
        DatasetStatus(
            "femnist (sample)",
            (FEMNIST_SAMPLE / "train").is_dir(),
            str(FEMNIST_SAMPLE),
            "shipped: 5 real writers; data.sample: true (suites/femnist-sample.yaml)",
        )
    )
    out.append(
        DatasetStatus(
            "shakespeare (sample)",
            SHAKESPEARE_SAMPLE.is_file(),
            str(SHAKESPEARE_SAMPLE),
            "shipped: 20 roles of tiny shakespeare, each a client (datasets/shakespeare-sample)",
        )
    )
    for name, how in (
        ("tiny-shakespeare", "hebench datasets fetch tiny-shakespeare   (or --path FILE for a local input.txt)"),
        ("shakespeare", "hebench datasets fetch shakespeare   (LEAF's Gutenberg edition; or --path FILE)"),
    ):
        found = resolve(name)
        out.append(DatasetStatus(name, found is not None, str(found or cache_dir() / name), how))
    root = cache_dir() / "torchvision"
    for name, (cls_name, _, _) in TORCHVISION_SETS.items():
        present = (root / cls_name).is_dir() or (root / name).is_dir() or any(root.glob(f"{name}*"))
        present = present or (name in CIFAR_FOLDERS and find_cifar(name, root) is not None)
        out.append(
            DatasetStatus(name, present, str(root), f"set data.download: true in a suite (torchvision {cls_name})")
        )
    return out
