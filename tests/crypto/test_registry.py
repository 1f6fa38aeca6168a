from __future__ import annotations

import sys

import pytest

from hebench.crypto import create_adapter, list_adapters
from hebench.errors import AdapterUnavailableError, UnknownAdapterError


def test_every_adapter_is_listed_with_install_hint():
    statuses = {s.name: s for s in list_adapters()}
    assert set(statuses) == {
        "plain",
        "paillier",
        "tenseal-ckks",
        "tenseal-bfv",
        "seal-bfv",
        "seal-ckks",
        "pyfhel-ckks",
        "pyfhel-bfv",
        "openfhe-ckks",
        "openfhe-bfv",
    }
    for s in statuses.values():
        assert s.install_hint
        assert s.available == (s.reason == "")


@pytest.mark.skipif(sys.version_info[:2] in ((3, 10), (3, 12)), reason="openfhe may import here")
def test_openfhe_unavailable_with_reason_on_this_python():
    status = {s.name: s for s in list_adapters()}["openfhe-ckks"]
    assert not status.available and "3.10" in status.reason and "3.12" in status.reason
    with pytest.raises(AdapterUnavailableError, match="unavailable"):
        create_adapter("openfhe-ckks")


def test_unknown_adapter():
    with pytest.raises(UnknownAdapterError, match="unknown adapter") as info:
        create_adapter("rot13")
    assert "choose one of" in info.value.fix
