"""FEMNIST readers and the checksummed, resumable fetch — on local fixtures, no network."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

from hebench.config import DataSpec
from hebench.data import fetch as fetch_mod
from hebench.data.leaf import read_leaf_json, read_split, read_tff_h5
from hebench.data.registry import load_federated
from hebench.errors import DatasetError


def test_leaf_sample_reads_five_real_writers(femnist_sample):
    train = read_split(femnist_sample, "train")
    test = read_split(femnist_sample, "test")
    assert sorted(train) == sorted(["f3797_07", "f3793_06", "f3728_28", "f3687_48", "f3785_26"])
    assert sum(len(v[1]) for v in train.values()) == 78 and sum(len(v[1]) for v in test.values()) == 89
    x, y = train["f3797_07"]
    assert x.shape == (11, 1, 28, 28) and float(x.max()) <= 1.0 and int(y.max()) < 62
    assert float(x.mean()) > 0.5  # white background, as LEAF stores it


def test_femnist_loader_uses_writers_as_clients(femnist_sample):
    data = load_federated(DataSpec(dataset="femnist", clients=2, images_per_client=12, path=str(femnist_sample)), 0)
    assert len(data.clients) == 2 and all(len(c) <= 12 for c in data.clients) and data.num_classes == 62
    with pytest.raises(DatasetError, match="asks for 6"):
        load_federated(DataSpec(dataset="femnist", clients=6, path=str(femnist_sample)), 0)


def _write_tff_h5(path: Path, writers: dict[str, int]) -> None:
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as fh:
        for uid, n in writers.items():
            group = fh.create_group(f"examples/{uid}")
            group["pixels"] = rng.random((n, 28, 28), dtype=np.float32)
            group["label"] = rng.integers(0, 62, n).astype(np.int32)


def test_tff_h5_reader(tmp_path):
    _write_tff_h5(tmp_path / "fed_emnist_train.h5", {"w1": 3, "w2": 5})
    writers = read_tff_h5(tmp_path / "fed_emnist_train.h5")
    assert {k: len(v[1]) for k, v in writers.items()} == {"w1": 3, "w2": 5}


def test_damaged_leaf_json_is_a_clear_error(tmp_path):
    bad = tmp_path / "train.json"
    bad.write_text(json.dumps({"users": ["u"], "user_data": {"u": {"x": [[0.0] * 10], "y": [1]}}}))
    with pytest.raises(DatasetError, match="expected"):
        read_leaf_json([bad])


@pytest.fixture
def archive(tmp_path) -> tuple[bytes, str]:
    """A small fed_emnist-shaped archive and its sha256."""
    src = tmp_path / "src"
    src.mkdir()
    _write_tff_h5(src / "fed_emnist_train.h5", {"a": 2, "b": 2})
    _write_tff_h5(src / "fed_emnist_test.h5", {"a": 1, "b": 1})
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:bz2") as tar:
        for f in src.iterdir():
            tar.add(f, arcname=f.name)
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


@pytest.fixture
def server(archive):
    """A loopback HTTP server with Range support (python's SimpleHTTPRequestHandler has none)."""
    data, _ = archive
    hits: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.headers.get("Range"))
            start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
            body = data[start:]
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}", hits
    httpd.shutdown()


def test_fetch_downloads_checks_and_extracts(tmp_path, monkeypatch, archive, server):
    _, digest = archive
    base, hits = server
    monkeypatch.setenv("HEBENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(
        fetch_mod,
        "card",
        lambda name: {
            "files": [{"url": "https://example.invalid/fed_emnist.tar.bz2", "sha256": digest, "extract": "tar"}]
        },
    )
    target = fetch_mod.fetch("femnist", base_url=base)
    assert (target / "fed_emnist_train.h5").exists() and hits == [None]
    assert set(read_split(target, "train")) == {"a", "b"}


def test_fetch_resumes_a_partial_download(tmp_path, archive, server):
    data, digest = archive
    base, hits = server
    dest = tmp_path / "fed_emnist.tar.bz2"
    (tmp_path / "fed_emnist.tar.bz2.part").write_bytes(data[:100])
    fetch_mod.download(f"{base}/fed_emnist.tar.bz2", dest, digest)
    assert dest.read_bytes() == data and hits == ["bytes=100-"]


def test_fetch_refuses_a_checksum_mismatch(tmp_path, server):
    base, _ = server
    with pytest.raises(DatasetError, match="checksum mismatch"):
        fetch_mod.download(f"{base}/x", tmp_path / "x", "0" * 64)
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.part").exists()


def test_fetch_unreachable_source_says_how_to_resume(tmp_path):
    with pytest.raises(DatasetError) as info:
        fetch_mod.download("http://127.0.0.1:9/none", tmp_path / "x", "0" * 64, timeout=2)
    assert "--path" in info.value.fix


def test_fetch_path_registers_a_local_copy(tmp_path, monkeypatch, femnist_sample):
    monkeypatch.setenv("HEBENCH_DATA", str(tmp_path))
    fetch_mod.fetch("femnist", path=femnist_sample)
    assert fetch_mod.resolve("femnist") == femnist_sample.resolve()
    assert len(load_federated(DataSpec(dataset="femnist", clients=2), 0).clients) == 2
