"""The ``data:`` block: which dataset, split over how many clients, and how."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from hebench.config.base import Frozen

DatasetName = Literal["digits", "natural", "tokens", "femnist", "mnist", "emnist", "cifar10", "cifar100"]
DATASETS: tuple[str, ...] = get_args(DatasetName)


class DataSpec(Frozen):
    dataset: DatasetName = "digits"
    clients: int | Literal["all"] = 3  # femnist: "all": every writer a client (LEAF)
    split: Literal["iid", "dirichlet"] = "iid"  # ignored by femnist, which is split by writer
    alpha: float = Field(0.5, gt=0)
    test_fraction: float = Field(0.2, gt=0, lt=1)
    images_per_client: int | None = Field(None, ge=1)  # FedNIC: 1,600
    min_per_client: int = Field(2, ge=1)  # split datasets: each client's fewest samples (1 allows more clients)
    path: str | None = None  # local copy (femnist: LEAF or TFF folder; torchvision: root)
    sample: bool = False  # femnist: the small real sample shipped in datasets/femnist-sample (offline)
    download: bool = False  # torchvision sets: allow downloading

    @field_validator("clients", mode="before")
    @classmethod
    def _count_or_all(cls, value: Any) -> int | str:
        if value == "all":
            return value
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Input should be a valid integer of at least 1, or 'all' (FEMNIST writers): {value!r}")
        return value

    @model_validator(mode="after")
    def _all_writers(self) -> DataSpec:
        if self.clients == "all" and self.dataset != "femnist":
            raise ValueError(
                f"clients: all takes every FEMNIST writer as a client; {self.dataset} is split into N: set clients: N"
            )
        if self.sample and (self.dataset != "femnist" or self.path is not None):
            raise ValueError(
                "sample: true reads the FEMNIST sample shipped with hebench: use it with dataset: femnist and no path"
            )
        return self
