"""HOST:PORT addresses are parsed and refused the same way everywhere."""

from __future__ import annotations

import pytest

from hebench.errors import ParameterError
from hebench.net.address import parse_address


@pytest.mark.parametrize(
    ("text", "want"), [("dpu0:7000", ("dpu0", 7000)), ("127.0.0.1:1", ("127.0.0.1", 1)), ("[::1]:9", ("::1", 9))]
)
def test_host_and_port(text, want):
    assert parse_address(text) == want


@pytest.mark.parametrize("text", ["dpu0", ":7000", "dpu0:", "dpu0:http", "dpu0:0", "dpu0:70000"])
def test_a_bad_address_names_the_field_and_an_example(text):
    with pytest.raises(ParameterError, match=r"offload\.engines entry") as err:
        parse_address(text, "offload.engines entry")
    assert "dpu0:7000" in err.value.fix
