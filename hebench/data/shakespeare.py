"""Shakespeare's roles as federated clients: the shipped sample, tiny shakespeare, or LEAF's complete works.

Sources (``sample=True`` takes the first; otherwise ``path``, else the cache filled by
``hebench datasets fetch tiny-shakespeare`` or ``... shakespeare``):
- the sample shipped in ``datasets/shakespeare-sample`` (20 roles of tiny shakespeare, their last 20 %
  held out; offline default);
- tiny shakespeare's ``input.txt`` (``NAME:`` blocks; a role is a speaker name, across the plays the file
  joins, since it names no plays);
- Gutenberg's Complete Works, the edition LEAF preprocesses (a role is a (play, character), as in LEAF).
Which roles become clients is a seeded draw of ``clients`` among those with ``min_speeches``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hebench.data.cache import shakespeare_sample
from hebench.data.fetch import resolve
from hebench.data.gutenberg import PLAY_MARK, client_name, read_complete_works
from hebench.data.role_json import read_role_json
from hebench.data.roles import MIN_SPEECHES, TEST_FRACTION, RoleSplit, RoleText, split_by_role
from hebench.data.speakers import read_speaker_blocks
from hebench.errors import DatasetError

TEXT_FILES = ("input.txt", "pg100.txt")  # tiny shakespeare's name, Gutenberg's
SAMPLE_CLIENTS, SAMPLE_SEED = 20, 0  # how the shipped sample was cut from tiny shakespeare (its SOURCE.md)


def pick_clients(roles: tuple[RoleText, ...], clients: int | None, seed: int) -> tuple[RoleText, ...]:
    """A seeded draw of ``clients`` roles (None: all), in their original order."""
    if clients is None:
        return roles
    if not 1 <= clients <= len(roles):
        raise DatasetError(f"{len(roles)} roles available; asked for {clients} clients", f"ask for 1 to {len(roles)}")
    picks = sorted(np.random.default_rng(seed).permutation(len(roles))[:clients])
    return tuple(roles[i] for i in picks)


def text_file(path: Path) -> Path:
    """The play text at ``path``: the file itself, or the one of ``input.txt`` / ``pg100.txt`` in a folder."""
    if path.is_file():
        return path
    found = [path / name for name in TEXT_FILES if (path / name).is_file()]
    if not found:
        raise DatasetError(
            f"no Shakespeare text at {path} (looked for {' or '.join(TEXT_FILES)})",
            "`hebench datasets fetch tiny-shakespeare` (or `shakespeare`), or pass the text file's path",
        )
    return found[0]


def read_roles(path: Path) -> dict[str, list[str]]:
    """Speeches per role of a text file in either layout (Gutenberg's when it has ``by William Shakespeare``)."""
    text = text_file(path).read_text(encoding="utf-8-sig", errors="replace")
    if f"\n{PLAY_MARK}" in text:
        return {client_name(play, role): said for (play, role), said in read_complete_works(text).items()}
    return read_speaker_blocks(text)


def load_shakespeare_roles(
    *,
    sample: bool = True,
    path: Path | None = None,
    clients: int | None = None,
    seed: int = 0,
    min_speeches: int = MIN_SPEECHES,
    test_fraction: float = TEST_FRACTION,
) -> tuple[RoleText, ...]:
    """The clients' roles (training and held-out speeches) from the sample, ``path`` or the cache."""
    if sample:
        return pick_clients(read_role_json(shakespeare_sample()), clients, seed)
    root = path if path is not None else (resolve("tiny-shakespeare") or resolve("shakespeare"))
    if root is None:
        raise DatasetError(
            "no Shakespeare text in the cache",
            "use the shipped sample, run `hebench datasets fetch tiny-shakespeare` (or `shakespeare`),"
            " or pass the text's path",
        )
    speeches = read_roles(Path(root))
    return split_by_role(speeches, clients, min_speeches=min_speeches, test_fraction=test_fraction, seed=seed).clients


def sample_split(path: Path) -> RoleSplit:
    """The cut the shipped sample was made with, applied to tiny shakespeare at ``path``: its 20 client roles
    and the public text of every other role (the tiny base model's pretraining text)."""
    return split_by_role(read_roles(path), SAMPLE_CLIENTS, seed=SAMPLE_SEED)
