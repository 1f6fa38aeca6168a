"""Fuzzing the readers of untrusted input: suites, key sets, ciphertexts, wire frames.

Every input yields a value or a typed hebench error (a HebenchError subclass), never another exception.
Examples are bounded so the suite stays quick (``HEBENCH_FUZZ_EXAMPLES`` raises the count for a longer hunt);
``deadline=None`` because adapters vary in speed.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hebench.config import apply_overrides, load_suite, parse_suite
from hebench.crypto import create_adapter, wire
from hebench.crypto.base import CIPHERTEXT_MAGIC, KEYS_MAGIC
from hebench.crypto.registry import load_adapter
from hebench.errors import HebenchError
from hebench.net.transport import Message, decode, encode
from tests.conftest import INSTALLED, fast_params

FUZZ = settings(
    max_examples=int(os.environ.get("HEBENCH_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
SUITE_KEYS = ["name", "data", "model", "training", "configurations", "offload", "measure", "privacy", "seed"]
CONFIG_KEYS = ["mode", "adapter", "params", "packing", "selective", "name"]
ADAPTERS = ["plain", "paillier", "tenseal-ckks", "tenseal-bfv", "pyfhel-ckks", "pyfhel-bfv", "nope"]
PARAM_KEYS = ["key_bits", "ring_degree", "coeff_mod_bits", "plain_modulus_bits", "frac_bits", "clip", "scale_bits"]


def typed_or_value(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except HebenchError:
        return None


configurations = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["raw", "host-he", "offload", "x"]) | json_values,
        "adapter": st.sampled_from(ADAPTERS) | json_values,
        "params": st.dictionaries(st.sampled_from(PARAM_KEYS), json_values, max_size=3) | json_values,
        "packing": json_values,
        "selective": json_values,
    },
)
suites = st.dictionaries(
    st.sampled_from(SUITE_KEYS) | st.text(max_size=6),
    json_values | st.lists(configurations, max_size=2),
    max_size=6,
)


@FUZZ
@given(raw=suites | json_values)
def test_suite_parser(raw):
    typed_or_value(parse_suite, raw, "fuzz")


@FUZZ
@given(
    overrides=st.lists(
        st.builds(
            lambda k, v: f"{k}={v}",
            st.lists(
                st.sampled_from(["name", "data", "0", "configurations", "x", "-1", ""]), min_size=1, max_size=4
            ).map(".".join),
            st.text(max_size=12),
        ),
        max_size=3,
    )
)
def test_suite_overrides(overrides):
    raw = {"name": "x", "data": {"clients": 2}, "configurations": [{"mode": "raw"}]}
    typed_or_value(parse_suite, raw, "fuzz", overrides)
    typed_or_value(apply_overrides, {"name": 1, "data": [1, {"a": None}]}, overrides, "fuzz")


@FUZZ
@given(content=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_suite_files(content, tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_bytes(content)
    typed_or_value(load_suite, path)


def _container(magic: bytes, header: Any, parts: list[bytes], sizes: Any = None) -> bytes:
    """A container with a valid checksum, whatever its header says (so the parsers behind it are reached)."""
    if isinstance(header, dict):
        header = dict(header, part_sizes=[len(p) for p in parts] if sizes is None else sizes)
    head = json.dumps(header).encode()
    body = b"".join([magic, struct.pack(">I", len(head)), head, *parts])
    return body + wire._digest(body)


headers = st.fixed_dictionaries(
    {},
    optional={
        "adapter": st.sampled_from(ADAPTERS) | json_values,
        "key_id": st.text(max_size=4) | json_values,
        "length": st.integers(-5, 1 << 40) | json_values,
        "state": json_values,
        "names": st.lists(st.sampled_from(["public_key", "secret_key", "context", "x"]), max_size=3) | json_values,
        "params": st.dictionaries(st.sampled_from(PARAM_KEYS), json_values, max_size=2) | json_values,
    },
)
containers = st.builds(
    _container,
    st.sampled_from([KEYS_MAGIC, CIPHERTEXT_MAGIC]),
    headers | json_values,
    st.lists(st.binary(max_size=64), max_size=3),
    st.none() | json_values,
)


@FUZZ
@given(blob=st.binary(max_size=200) | containers)
def test_key_set_reader(blob):
    typed_or_value(load_adapter, blob)


class _Keyed(dict):
    def __repr__(self) -> str:  # keeps Hypothesis' report of a failing example short
        return "keyed"


@pytest.fixture(scope="module")
def keyed() -> dict[str, Any]:
    """One keyed adapter per installed library, and a valid ciphertext and key set of each."""
    out = _Keyed()
    for name in ("paillier", "tenseal-ckks", "tenseal-bfv", "pyfhel-ckks", "pyfhel-bfv"):
        if name in INSTALLED:
            adapter = create_adapter(name, fast_params(name))
            adapter.keygen()
            import numpy as np

            out[name] = (adapter, adapter.serialize(adapter.encrypt(np.ones(3))), adapter.export_keys(secret=False))
    return out


def _mutate(blob: bytes, at: int, value: int, cut: int) -> bytes:
    """Change one byte and maybe truncate, then re-seal the checksum so the library parser sees it."""
    body = bytearray(blob[: -wire.DIGEST_BYTES])
    body[at % len(body)] = value
    body = body[: max(8, len(body) - cut)]
    return bytes(body) + wire._digest(bytes(body))


@pytest.mark.parametrize("name", ["paillier", "tenseal-ckks", "tenseal-bfv", "pyfhel-ckks", "pyfhel-bfv"])
@FUZZ
@given(data=st.data())
def test_ciphertext_reader(keyed, name, data):
    if name not in keyed:
        pytest.skip(f"{name} not installed")
    adapter, blob, keys = keyed[name]
    key_id = adapter.key_id
    crafted = st.builds(
        lambda parts, state, length: _container(
            CIPHERTEXT_MAGIC, {"adapter": name, "key_id": key_id, "length": length, "state": state}, parts
        ),
        st.lists(st.binary(max_size=64), max_size=3),
        json_values,
        st.integers(-3, 10),
    )
    mutated = st.builds(_mutate, st.just(blob), st.integers(0, 1 << 20), st.integers(0, 255), st.integers(0, 64))
    candidate = data.draw(st.binary(max_size=200) | crafted | mutated)
    enc = typed_or_value(adapter.deserialize, candidate)
    if enc is not None:  # whatever parsed must also decrypt or fail typed
        typed_or_value(adapter.decrypt, enc)
    typed_or_value(
        load_adapter,
        data.draw(st.builds(_mutate, st.just(keys), st.integers(0, 1 << 20), st.integers(0, 255), st.integers(0, 64))),
    )


frames = st.builds(
    lambda kind, meta, parts: encode(Message(kind, meta, tuple(parts))),
    st.text(max_size=8),
    st.dictionaries(st.text(max_size=6), json_values, max_size=3),
    st.lists(st.binary(max_size=16), max_size=3),
)


@FUZZ
@given(
    frame=st.binary(max_size=200)
    | frames
    | st.builds(lambda f, at, v: f[:at] + bytes([v]) + f[at + 1 :], frames, st.integers(0, 80), st.integers(0, 255))
    | st.builds(
        lambda head, tail: struct.pack(">I", len(head)) + head + tail,
        json_values.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=20),
    )
)
def test_wire_frame_decoder(frame):
    msg = typed_or_value(decode, frame)
    assert msg is None or isinstance(msg, Message)
