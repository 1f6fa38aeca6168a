"""Cut datasets/shakespeare-sample/roles.json from tiny shakespeare (reproducible: same input, same bytes).

    python tools/cut_shakespeare_sample.py PATH/TO/input.txt

Checks the input against datasets/tiny-shakespeare.yaml's SHA-256, keeps 20 roles (a draw with seed 0
among the roles with at least 60 speeches), holds out the last 20 % of each role's speeches, and
prints the written file's SHA-256 (SOURCE.md states it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hebench.data.cache import SHAKESPEARE_SAMPLE, card
from hebench.data.fetch import sha256_of
from hebench.data.role_json import write_role_json
from hebench.data.shakespeare import sample_split, text_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("text", type=Path, help="tiny shakespeare's input.txt (or its folder)")
    parser.add_argument("--out", type=Path, default=SHAKESPEARE_SAMPLE)
    args = parser.parse_args()
    source = text_file(args.text)
    expected = card("tiny-shakespeare")["files"][0]["sha256"]
    if sha256_of(source) != expected:
        print(f"error: {source} is not tiny shakespeare (sha256 {expected})", file=sys.stderr)
        return 2
    split = sample_split(source)
    out = write_role_json(split.clients, args.out)
    print(f"{out}: {len(split.clients)} roles, sha256 {sha256_of(out)}")
    print(f"public text: {len(split.public)} speeches of the other roles, {sum(map(len, split.public))} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
