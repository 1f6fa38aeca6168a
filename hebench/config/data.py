"""The ``data:`` block: which dataset, split over how many clients, and how.

Text (``dataset: shakespeare``): each client is a speaking role (LEAF's split), its last speeches held out; its
text is encoded with the ``tokenizer`` and cut into blocks of ``block_tokens`` tokens. Without ``path`` the
Shakespeare sample shipped with hebench is read (``sample: true``); ``sample: false`` reads the cache
(``hebench datasets fetch tiny-shakespeare`` or ``shakespeare``).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from hebench.config.base import FieldProblem, Frozen

DatasetName = Literal["digits", "natural", "tokens", "femnist", "mnist", "emnist", "cifar10", "cifar100", "shakespeare"]
DATASETS: tuple[str, ...] = get_args(DatasetName)
TEXT_DATASETS = ("shakespeare",)  # natural-language text, for the GPT-2 decoders (next-token prediction)
SAMPLES = ("femnist", "shakespeare")  # datasets with a sample shipped with hebench (data.sample)
DEFAULT_VOCAB = 4096  # tokenizer source: train, when no vocab_size is given


class TokenizerSpec(Frozen):
    """The vocabulary text is encoded with (its files are written into the run folder).

    ``pretrained``: the byte-level BPE vocabulary shipped with the pretrained tiny base (2,048 entries, trained on
    public Shakespeare no client holds); ``train``: a byte-level BPE vocabulary of ``vocab_size`` trained here on
    the clients' training text; ``files``: a user's ``vocab.json`` and ``merges.txt`` (GPT-2's layout) at ``path``.
    """

    source: Literal["pretrained", "train", "files"] = "pretrained"
    vocab_size: int | None = Field(None, ge=257)  # train: the vocabulary's size (256 bytes + <|endoftext|> at least)
    path: str | None = None  # files: a folder holding vocab.json and merges.txt, or the vocab.json (merges beside)

    @model_validator(mode="after")
    def _source_keys(self) -> TokenizerSpec:
        if self.vocab_size is not None and self.source != "train":
            raise ValueError("vocab_size sizes a vocabulary trained here: set source: train, or remove vocab_size")
        if self.source == "files" and not self.path:
            raise ValueError("source: files reads a vocabulary from path: set path to a folder with vocab.json")
        if self.path is not None and self.source != "files":
            raise ValueError("path names a user's vocabulary files: set source: files, or remove path")
        return self

    @property
    def size(self) -> int | None:
        """The vocabulary size asked for (train), else None (the files' or the pretrained base's)."""
        return (self.vocab_size or DEFAULT_VOCAB) if self.source == "train" else None


class DataSpec(Frozen):
    dataset: DatasetName = "digits"
    clients: int | Literal["all"] = 3  # femnist: "all": every writer a client (LEAF)
    split: Literal["iid", "dirichlet"] = "iid"  # ignored by femnist, which is split by writer
    alpha: float = Field(0.5, gt=0)
    test_fraction: float = Field(0.2, gt=0, lt=1)
    images_per_client: int | None = Field(None, ge=1)  # FedNIC: 1,600
    min_per_client: int = Field(2, ge=1)  # split datasets: each client's fewest samples (1 allows more clients)
    path: str | None = None  # local copy (femnist: LEAF or TFF folder; torchvision: root)
    sample: bool = False  # femnist, shakespeare: the small real sample shipped in datasets/ (offline)
    download: bool = False  # torchvision sets: allow downloading
    # text (shakespeare)
    block_tokens: int = Field(64, ge=2)  # tokens per block a language model trains and is evaluated on
    min_speeches: int = Field(60, ge=2)  # a role with fewer speeches is not a client
    tokenizer: TokenizerSpec | None = None  # None: the pretrained base's vocabulary

    @model_validator(mode="before")
    @classmethod
    def _text_sample_by_default(cls, raw: Any) -> Any:
        """Shakespeare reads the shipped sample unless a path or ``sample: false`` says otherwise."""
        if (
            isinstance(raw, dict)
            and raw.get("dataset") == "shakespeare"
            and "sample" not in raw
            and not raw.get("path")
        ):
            return {**raw, "sample": True}
        return raw

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
        if self.clients == "all" and self.dataset not in ("femnist", "shakespeare"):
            raise ValueError(
                "clients: all takes every FEMNIST writer (or Shakespeare role) as a client; "
                f"{self.dataset} is split into N: set clients: N"
            )
        if self.sample and (self.dataset not in SAMPLES or self.path is not None):
            raise ValueError(
                f"sample: true reads a sample shipped with hebench ({', '.join(SAMPLES)}): use it with one of those "
                "datasets and no path"
            )
        if self.tokenizer is not None and not self.is_text:
            raise FieldProblem("tokenizer", f"tokenizer encodes text; {self.dataset} is not text: remove tokenizer")
        return self

    @property
    def is_text(self) -> bool:
        return self.dataset in TEXT_DATASETS

    @property
    def vocabulary(self) -> TokenizerSpec:
        """The tokenizer text is encoded with (the pretrained base's when none is given)."""
        return self.tokenizer or TokenizerSpec()
