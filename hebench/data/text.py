"""Text datasets as federated data: Shakespeare's roles as clients, encoded with the run's tokenizer, in blocks.

Each client is a speaking role (LEAF's split; :mod:`hebench.data.shakespeare`), its training and held-out
speeches cut into blocks of ``data.block_tokens`` tokens (:mod:`hebench.data.text_blocks`); the test set is
every client's held-out blocks. The vocabulary is the pretrained base's (shipped with hebench, trained on public
text no client holds), one trained here on the clients' training text (the clients would agree on it before
training; in a deployment it comes from public text), or a user's files (GPT-2's, for instance).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hebench.config import DataSpec, TokenizerSpec
from hebench.data.bpe import TextTokenizer, load_bpe, train_bpe
from hebench.data.federated import ClientData, FederatedData
from hebench.data.roles import RoleText
from hebench.data.shakespeare import load_shakespeare_roles
from hebench.data.text_blocks import tokenise_clients


def text_tokenizer(spec: TokenizerSpec, roles: Sequence[RoleText]) -> TextTokenizer:
    """The vocabulary ``spec`` names (``train``: trained on ``roles``' training speeches)."""
    if spec.source == "train":
        size = spec.size
        assert size is not None
        return train_bpe((speech for role in roles for speech in role.train), size)
    if spec.source == "files":
        assert spec.path is not None
        return load_bpe(Path(spec.path))
    from hebench.models.language.pretrained import TINY_BASE  # the base carries its tokenizer

    return load_bpe(TINY_BASE)


def load_shakespeare(spec: DataSpec, seed: int) -> FederatedData:
    """The suite's Shakespeare roles as clients of token blocks (``x`` and ``y`` the same blocks)."""
    roles = load_shakespeare_roles(
        sample=spec.sample,
        path=Path(spec.path) if spec.path else None,
        clients=None if spec.clients == "all" else spec.clients,
        seed=seed,
        min_speeches=spec.min_speeches,
        test_fraction=spec.test_fraction,
    )
    tokenizer = text_tokenizer(spec.vocabulary, roles)
    text = tokenise_clients("shakespeare", roles, tokenizer, spec.block_tokens)
    clients = tuple(ClientData(c.client_id, c.train, c.train) for c in text.clients)
    test = text.test
    return FederatedData("shakespeare", clients, test, test, tokenizer.vocab_size, tokenizer)
