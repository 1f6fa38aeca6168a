"""The Flower server samples suite clients by partition: every partition hosted by exactly one node."""

from __future__ import annotations

import pytest

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")

from hebench.errors import PartyError
from hebench.runtime.flower.strategy import _checked_partitions


def test_one_node_per_partition_is_the_map():
    mapping = {101: 2, 102: 0, 103: 1}
    assert _checked_partitions(mapping, 3, 3) == mapping


@pytest.mark.parametrize(
    ("mapping", "asked", "problem"),
    [
        ({101: 0, 102: 0, 103: 1}, 3, "nodes 101, 102 all say partition-id 0"),
        ({101: 0, 102: 1}, 2, "no node hosts partition-id 2"),
        ({101: 0, 102: 1, 103: 2, 104: 3}, 4, "partition-id 3 is out of range for data.clients=3"),
        ({101: 0, 102: 1}, 3, "1 of 3 nodes did not say"),
    ],
)
def test_a_federation_that_is_not_one_node_per_partition_is_named(mapping, asked, problem):
    with pytest.raises(PartyError, match=problem) as err:
        _checked_partitions(mapping, asked, 3)
    assert "one SuperNode per partition-id 0 … 2" in err.value.fix
