"""Shakespeare as federated data: roles as clients of token blocks, the tokenizer the suite names, and the run
folder's tokenizer and model description from which the clients' model is rebuilt."""

from __future__ import annotations

import json

import pytest
import torch

from hebench.config import parse_suite
from hebench.data.bpe import load_bpe
from hebench.data.registry import load_federated
from hebench.models.language.pretrained import TINY_BASE
from hebench.models.language.run_files import load_run_model, write_run_files
from hebench.results.run_folder import RunFolder

TEXT = {
    "name": "t",
    "data": {"dataset": "shakespeare", "clients": 3, "block_tokens": 32},
    "model": {"name": "gpt2_tiny", "pretrained": True, "fine_tuning": {"kind": "lora", "rank": 2}},
    "configurations": [{"mode": "raw"}, {"mode": "raw", "fine_tuning": {"kind": "full"}}],
}


def test_the_sample_gives_roles_as_clients_of_blocks_encoded_with_the_bases_vocabulary():
    suite = parse_suite(TEXT)
    data = load_federated(suite.data, suite.seed)
    assert len(data.clients) == 3 and data.input_shape == (32,) and data.num_classes == 2048
    assert data.end_of_text == 0 and data.tokenizer is not None
    for client in data.clients:
        assert client.x is client.y and client.x.dtype == torch.long and client.x.shape[1] == 32 and len(client) > 0
    assert data.test_x is data.test_y and int(data.test_x.max()) < 2048
    assert data.tokenizer.encode("To be") == load_bpe(TINY_BASE).encode("To be")
    assert data.summary()["client_ids"] == [c.client_id for c in data.clients]
    again = load_federated(suite.data, suite.seed)
    assert [c.client_id for c in again.clients] == [c.client_id for c in data.clients]


def test_a_vocabulary_trained_here_or_read_from_files_encodes_the_clients_text(tmp_path):
    trained = dict(
        TEXT, model={"name": "gpt2_tiny"}, data={**TEXT["data"], "tokenizer": {"source": "train", "vocab_size": 400}}
    )
    data = load_federated(parse_suite(trained).data, 0)
    assert data.num_classes == 400 and data.end_of_text == 0 and int(data.clients[0].x.max()) < 400
    data.tokenizer.save(tmp_path / "mine")
    files = dict(trained, data={**TEXT["data"], "tokenizer": {"source": "files", "path": str(tmp_path / "mine")}})
    again = load_federated(parse_suite(files).data, 0)
    assert torch.equal(again.clients[0].x, data.clients[0].x)


def test_the_run_folder_keeps_the_tokenizer_and_rebuilds_each_configurations_model(tmp_path):
    suite = parse_suite(TEXT)
    data = load_federated(suite.data, suite.seed)
    folder = RunFolder(tmp_path)
    folder.suite.write_text(json.dumps(suite.model_dump(mode="json")))
    write_run_files(folder, suite, data.tokenizer)
    described = json.loads(folder.language_model.read_text())
    lora, full = described["configurations"]["raw"], described["configurations"]["raw/full"]
    assert lora["update_parameters"] == 2 * 2 * (128 + 3 * 128) and full["update_parameters"] == 675_328
    assert next(name for name, _ in lora["update_layout"]).endswith("h.0.attn.c_attn.lora_A.default.weight")
    assert described["pretrained_base"]["sha256"] and described["end_of_text"] == 0
    model, tokenizer = load_run_model(tmp_path, "raw")
    assert tokenizer.decode(tokenizer.encode("Wherefore art thou")) == "Wherefore art thou"
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == lora["update_parameters"]
    with pytest.raises(Exception, match="no checkpoint of round 0"):
        load_run_model(tmp_path, "raw", 0)
