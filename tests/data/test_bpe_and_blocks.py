"""Byte-level BPE trained here or read from GPT-2-format files; clients' text as token blocks."""

from __future__ import annotations

import json

import pytest
import torch

from hebench.data.bpe import END_OF_TEXT, load_bpe, train_bpe
from hebench.data.roles import RoleText
from hebench.data.text_blocks import to_blocks, tokenise_clients
from hebench.errors import DatasetError

TEXT = [
    "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune,\nOr to take arms against a sea of troubles",
    "And by opposing end them. To die—to sleep,\nNo more; and by a sleep to say we end",
] * 20
ODD = "Ünïcode ☃, tabs\tand  double  spaces,\n\nblank lines, <|endoftext|> and words never seen: zyzzyva"


@pytest.fixture(scope="module")
def tokenizer():
    return train_bpe(TEXT, vocab_size=320)


def test_training_gives_the_asked_vocabulary_and_is_deterministic(tokenizer):
    assert tokenizer.vocab_size == 320 and tokenizer.end_of_text == 0
    again = train_bpe(TEXT, vocab_size=320)
    assert again.encode(ODD) == tokenizer.encode(ODD)
    assert len(tokenizer.encode(TEXT[0])) < 0.6 * len(TEXT[0].encode())  # merges learnt: fewer tokens than bytes


def test_any_text_round_trips(tokenizer):
    for text in [*TEXT[:3], ODD, ""]:
        assert tokenizer.decode(tokenizer.encode(text)) == text
    assert tokenizer.encode(END_OF_TEXT) == [tokenizer.end_of_text]


def test_saved_files_load_back_as_the_same_tokenizer(tokenizer, tmp_path):
    folder = tokenizer.save(tmp_path / "run" / "tokenizer")
    assert sorted(p.name for p in folder.iterdir()) == ["merges.txt", "vocab.json"]
    for loaded in (load_bpe(folder), load_bpe(folder / "vocab.json", folder / "merges.txt")):
        assert loaded.encode(ODD) == tokenizer.encode(ODD) and loaded.vocab_size == 320
        assert loaded.encode(END_OF_TEXT) == [0]


def test_a_users_gpt2_format_files_are_read(tmp_path):
    """A hand-written vocabulary in GPT-2's layout (vocab.json + merges.txt, 'Ġ' for a space)."""
    byte_symbols = [chr(c) for c in range(ord("!"), ord("~") + 1)]
    vocab = {s: i for i, s in enumerate([*byte_symbols, "Ġ", "Ġt", "Ġto", END_OF_TEXT])}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ t\nĠt o\n")
    user = load_bpe(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert user.encode(" to") == [vocab["Ġto"]] and user.end_of_text == vocab[END_OF_TEXT]
    assert user.decode(user.encode("a to b")) == "a to b"


def test_bad_vocabularies_are_refused(tmp_path):
    with pytest.raises(DatasetError, match="at least 257"):
        train_bpe(TEXT, vocab_size=100)
    with pytest.raises(DatasetError, match="not found"):
        load_bpe(tmp_path)


def test_blocks_are_consecutive_and_the_tail_dropped():
    blocks = to_blocks(list(range(10)), 4)
    assert blocks.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]] and blocks.dtype == torch.long


def test_clients_train_and_test_text_are_blocked_apart(tokenizer):
    role = RoleText("HAMLET", tuple(TEXT[:6]), tuple(TEXT[6:9]))
    data = tokenise_clients("t", [role], tokenizer, length=8)
    client = data.clients[0]
    assert client.train.shape[1] == client.test.shape[1] == 8 and data.vocab_size == 320
    train_ids = tokenizer.encode("\n\n".join(role.train))
    assert client.train.reshape(-1).tolist() == train_ids[: client.train.numel()]
    assert torch.equal(data.test, client.test) and data.summary()["clients"] == 1
    with pytest.raises(DatasetError, match="too little text"):
        tokenise_clients("t", [RoleText("X", ("a b",), ("c",))], tokenizer, length=64)
