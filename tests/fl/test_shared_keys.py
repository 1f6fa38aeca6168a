"""A pool worker loads each key set once for all its client threads."""

from __future__ import annotations

import threading

from hebench.fl.shared_keys import KEEP, SharedKeys


class FakeAdapter:
    has_secret_key = True

    def __init__(self, blob: bytes) -> None:
        self.blob, self.calls = blob, 0

    def decrypt(self, value: int) -> int:
        self.calls += 1
        return value + 1


def test_the_same_key_bytes_are_loaded_once_and_shared():
    loads: list[bytes] = []
    keys = SharedKeys(load=lambda blob: loads.append(blob) or FakeAdapter(blob))
    got = []
    threads = [threading.Thread(target=lambda: got.append(keys.load(b"epoch-0"))) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == [b"epoch-0"] and all(g is got[0] for g in got)
    assert keys.load(b"epoch-1") is not got[0] and loads == [b"epoch-0", b"epoch-1"]


def test_a_shared_set_behaves_as_the_adapter_it_wraps():
    keys = SharedKeys(load=FakeAdapter)
    shared = keys.load(b"k")
    assert shared.has_secret_key is True
    assert shared.decrypt(41) == 42 and shared.calls == 1


def test_old_sets_are_let_go():
    loads: list[bytes] = []
    keys = SharedKeys(load=lambda blob: loads.append(blob) or FakeAdapter(blob))
    for e in range(KEEP + 1):
        keys.load(b"epoch-%d" % e)
    keys.load(b"epoch-0")  # evicted: loaded again
    assert loads.count(b"epoch-0") == 2
