"""Clients' text as token blocks: what a language model trains and is evaluated on.

Each client's speeches are joined (a blank line between speeches, as in the plays), encoded with the
run's tokenizer and cut into consecutive blocks of ``length`` tokens; the tail shorter than a block is
dropped. Training and held-out text are blocked separately, so no block mixes the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from hebench.data.bpe import TextTokenizer
from hebench.data.roles import RoleText
from hebench.errors import DatasetError

SPEECH_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class TextClient:
    client_id: str
    train: torch.Tensor  # (n, length) int64 token ids
    test: torch.Tensor  # (m, length) int64 token ids, the role's held-out speeches

    def __len__(self) -> int:
        return int(self.train.shape[0])


@dataclass(frozen=True)
class LanguageData:
    name: str
    clients: tuple[TextClient, ...]
    length: int
    vocab_size: int

    @property
    def test(self) -> torch.Tensor:
        """Every client's held-out blocks, client after client."""
        return torch.cat([c.test for c in self.clients])

    def summary(self) -> dict[str, object]:
        return {
            "dataset": self.name,
            "clients": len(self.clients),
            "blocks_per_client": [len(c) for c in self.clients],
            "test_blocks": int(self.test.shape[0]),
            "block_tokens": self.length,
            "vocab_size": self.vocab_size,
        }


def to_blocks(ids: Sequence[int], length: int) -> torch.Tensor:
    """Consecutive, non-overlapping blocks of ``length`` tokens, shape ``(len(ids) // length, length)``."""
    n = len(ids) // length
    return torch.as_tensor(list(ids[: n * length]), dtype=torch.long).reshape(n, length)


def encode_speeches(speeches: Sequence[str], tokenizer: TextTokenizer, length: int) -> torch.Tensor:
    return to_blocks(tokenizer.encode(SPEECH_SEPARATOR.join(speeches)), length)


def tokenise_clients(name: str, roles: Sequence[RoleText], tokenizer: TextTokenizer, length: int) -> LanguageData:
    """Every role's training and held-out text as blocks; a role too short for one block of each is an error."""
    if length < 2:
        raise DatasetError(f"blocks of {length} token(s) hold no next-token target", "use a block length >= 2")
    clients = []
    for role in roles:
        train, test = (encode_speeches(part, tokenizer, length) for part in (role.train, role.test))
        if len(train) == 0 or len(test) == 0:
            raise DatasetError(
                f"role {role.role!r} has too little text for one {length}-token block of training and of test text",
                "use a shorter block length, or roles with more speeches",
            )
        clients.append(TextClient(role.role, train, test))
    return LanguageData(name, tuple(clients), length, tokenizer.vocab_size)
