"""Byte-level BPE tokenizers (GPT-2's scheme) through Hugging Face ``tokenizers``: trained here, or read from files.

Training is offline, on the clients' or the public training text, with a configurable vocabulary size;
``<|endoftext|>`` is the one special token (id 0 in a vocabulary trained here). A tokenizer is saved as
GPT-2's two files, ``vocab.json`` and ``merges.txt``, in a folder (a run folder, so that attacks and
reports decode with the same vocabulary); a user's own files in that format (GPT-2's, for instance)
load the same way. Byte-level BPE encodes any text and decodes it back to the same string.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hebench.errors import DatasetError

END_OF_TEXT = "<|endoftext|>"
VOCAB_FILE, MERGES_FILE = "vocab.json", "merges.txt"
MIN_VOCAB = 257  # the 256 byte symbols and <|endoftext|>


@dataclass(frozen=True)
class TextTokenizer:
    """A byte-level BPE tokenizer (``tokenizers.ByteLevelBPETokenizer``) with its end-of-text id."""

    bpe: object  # tokenizers.implementations.ByteLevelBPETokenizer (typed loosely: no stubs ship)

    @property
    def vocab_size(self) -> int:
        return int(self.bpe.get_vocab_size())  # type: ignore[attr-defined]

    @property
    def end_of_text(self) -> int:
        token = self.bpe.token_to_id(END_OF_TEXT)  # type: ignore[attr-defined]
        if token is None:
            raise DatasetError(f"this vocabulary has no {END_OF_TEXT} token", "use a GPT-2-style vocabulary")
        return int(token)

    def encode(self, text: str) -> list[int]:
        return list(self.bpe.encode(text).ids)  # type: ignore[attr-defined]

    def decode(self, ids: Iterable[int]) -> str:
        return str(self.bpe.decode(list(ids), skip_special_tokens=False))  # type: ignore[attr-defined]

    def save(self, folder: Path) -> Path:
        """Write ``vocab.json`` and ``merges.txt`` into ``folder`` (created) and return it."""
        folder.mkdir(parents=True, exist_ok=True)
        self.bpe.save_model(str(folder))  # type: ignore[attr-defined]
        return folder


def train_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> TextTokenizer:
    """Train a byte-level BPE vocabulary of ``vocab_size`` entries on ``texts`` (deterministic, offline)."""
    from tokenizers import ByteLevelBPETokenizer

    if vocab_size < MIN_VOCAB:
        raise DatasetError(
            f"a byte-level vocabulary needs at least {MIN_VOCAB} entries, asked for {vocab_size}",
            "raise the vocabulary size (e.g. 4096)",
        )
    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator(
        iter(texts),
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[END_OF_TEXT],
        show_progress=False,
    )
    return TextTokenizer(bpe)


def load_bpe(path: Path, merges: Path | None = None) -> TextTokenizer:
    """A tokenizer from a folder holding ``vocab.json`` and ``merges.txt``, or from those two files."""
    from tokenizers import ByteLevelBPETokenizer

    vocab = Path(path) / VOCAB_FILE if Path(path).is_dir() else Path(path)
    merges = merges if merges is not None else vocab.with_name(MERGES_FILE)
    missing = [str(p) for p in (vocab, merges) if not p.is_file()]
    if missing:
        raise DatasetError(
            f"no byte-level BPE vocabulary: {', '.join(missing)} not found",
            f"pass a folder holding {VOCAB_FILE} and {MERGES_FILE} (GPT-2's layout), or both files",
        )
    try:
        bpe = ByteLevelBPETokenizer.from_file(str(vocab), str(merges), add_prefix_space=False)
    except Exception as err:  # tokenizers raises its own Exception subclass for malformed files
        raise DatasetError(f"{vocab} / {merges} are not a BPE vocabulary: {err}", "pass GPT-2-format files") from None
    if bpe.token_to_id(END_OF_TEXT) is not None:
        bpe.add_special_tokens([END_OF_TEXT])  # vocab.json lists it; mark it special again, as when trained
    return TextTokenizer(bpe)
