"""Clients by speaking role, as LEAF's Shakespeare: each role with enough speeches is a client, its last
speeches held out; the roles no client holds are public text, for pretraining a base model centrally.

LEAF keeps a role with at least two lines and holds out the last 20 % of them (a temporal split: a
role's later speeches are its test text). Here the unit is a speech, a role needs ``min_speeches``
to be a client, and which eligible roles become clients is a seeded draw of ``clients`` of them; every
other role's speeches (eligible or not) are public. No speech of a client role is in the public text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hebench.errors import DatasetError

TEST_FRACTION = 0.2  # LEAF's (and the FedAvg paper's) share of each role's text held out
MIN_SPEECHES = 60


@dataclass(frozen=True)
class RoleText:
    """One client: a role's speeches in order, the last ``test`` of them held out."""

    role: str
    train: tuple[str, ...]
    test: tuple[str, ...]


@dataclass(frozen=True)
class RoleSplit:
    clients: tuple[RoleText, ...]  # sorted by role
    public: tuple[str, ...]  # every speech of the roles no client holds, in reading order by role


def hold_out(role: str, speeches: list[str], test_fraction: float = TEST_FRACTION) -> RoleText:
    """A role's speeches with the last ``test_fraction`` (at least one) held out."""
    if len(speeches) < 2:
        raise DatasetError(f"role {role!r} has {len(speeches)} speech(es): a client needs one to train, one to test")
    n_test = max(1, int(len(speeches) * test_fraction))
    return RoleText(role, tuple(speeches[:-n_test]), tuple(speeches[-n_test:]))


def eligible_roles(speeches: Mapping[str, list[str]], min_speeches: int = MIN_SPEECHES) -> list[str]:
    """Roles with at least ``min_speeches`` speeches, sorted by name."""
    return sorted(role for role, said in speeches.items() if len(said) >= min_speeches)


def split_by_role(
    speeches: Mapping[str, list[str]],
    clients: int | None,
    *,
    min_speeches: int = MIN_SPEECHES,
    test_fraction: float = TEST_FRACTION,
    seed: int = 0,
) -> RoleSplit:
    """``clients`` roles (a seeded draw among the eligible; None: all of them) as clients; the rest public."""
    if not 0.0 < test_fraction < 1.0:
        raise DatasetError(f"test_fraction must be in (0, 1), got {test_fraction}", "use e.g. 0.2 (LEAF's)")
    pool = eligible_roles(speeches, min_speeches)
    if clients is None:
        chosen = pool
    elif clients < 1 or clients > len(pool):
        raise DatasetError(
            f"{len(pool)} roles have at least {min_speeches} speeches; asked for {clients} clients",
            f"ask for 1 to {len(pool)} clients, or lower the minimum number of speeches per role",
        )
    else:
        picks = np.random.default_rng(seed).permutation(len(pool))[:clients]
        chosen = sorted(pool[i] for i in picks)
    taken = set(chosen)
    public = tuple(s for role, said in speeches.items() if role not in taken for s in said)
    return RoleSplit(tuple(hold_out(role, list(speeches[role]), test_fraction) for role in chosen), public)
