#!/usr/bin/env python3
"""Build and cache a Pyfhel wheel that works offline.

Pyfhel ships only an sdist whose build fetches SEAL's dependencies from
GitHub. With Debian's ``libmsgsl-dev`` and ``libzstd-dev`` installed, the
build succeeds once its ``pyproject.toml`` turns ``SEAL_BUILD_DEPS`` off and
links zstd and zlib explicitly. This script downloads the sdist from PyPI
(checking its sha256), applies that change, builds the wheel and caches it in
``$HEBENCH_WHEEL_CACHE`` (default ``~/.cache/hebench/wheels``). It prints the
wheel's path. Re-running it reuses the cached wheel.

Usage: python tools/build_pyfhel.py [--version 3.5.0] [--install]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

SIMPLE_INDEX = "https://pypi.org/simple/pyfhel/"
# Digests of sdists we have built and verified; other versions use the index's digest.
KNOWN_SHA256 = {"3.5.0": "0375b83b5a83026924f59db25c4efa9f27e1e8a66d004658f4d24195986a04b6"}
LINK_FLAGS = '"-lzstd", "-lz"'


def cache_dir() -> Path:
    root = os.environ.get("HEBENCH_WHEEL_CACHE") or Path.home() / ".cache" / "hebench" / "wheels"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_wheel(version: str) -> Path | None:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for wheel in sorted(cache_dir().glob(f"[pP]yfhel-{version}-{tag}-*.whl")):
        return wheel
    return None


def fetch_sdist(version: str, dest: Path) -> Path:
    """Download the sdist named in PyPI's simple index and check its sha256."""
    with urllib.request.urlopen(SIMPLE_INDEX, timeout=60) as response:
        page = response.read().decode()
    pattern = rf'href="([^"#]+/(pyfhel-{re.escape(version)}\.tar\.gz))#sha256=([0-9a-f]{{64}})"'
    match = re.search(pattern, page, flags=re.IGNORECASE)
    if match is None:
        raise SystemExit(f"no sdist of Pyfhel {version} in {SIMPLE_INDEX}")
    url, filename, index_digest = match.groups()
    expected = KNOWN_SHA256.get(version, index_digest)
    target = dest / filename
    with urllib.request.urlopen(url, timeout=300) as response:
        target.write_bytes(response.read())
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != expected:
        raise SystemExit(f"sha256 mismatch for {filename}: got {digest}, expected {expected}")
    return target


def patch_pyproject(text: str) -> str:
    """Turn off SEAL's dependency download and link zstd/zlib on Linux."""
    if "SEAL_BUILD_DEPS" not in text:
        text = text.replace(
            "[cpplibraries.SEAL.cmake_opts]",
            "[cpplibraries.SEAL.cmake_opts]\n    SEAL_BUILD_DEPS = 'OFF'",
            1,
        )
    old = '{Linux = ["-Wl,-rpath=$ORIGIN/.", "-fopenmp"]}'
    new = '{Linux = ["-Wl,-rpath=$ORIGIN/.", "-fopenmp", ' + LINK_FLAGS + "]}"
    if text.count(new) == 2:
        return text
    if text.count(old) != 2:
        raise SystemExit("Pyfhel's pyproject.toml changed shape; update tools/build_pyfhel.py")
    return text.replace(old, new)


def build(version: str) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sdist = fetch_sdist(version, work)
        with tarfile.open(sdist) as archive:
            archive.extractall(work, filter="data")
        source = next(p for p in work.iterdir() if p.is_dir())
        pyproject = source / "pyproject.toml"
        pyproject.write_text(patch_pyproject(pyproject.read_text()))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(cache_dir()), str(source)],
            check=True,
        )
    wheel = cached_wheel(version)
    if wheel is None:
        raise SystemExit("pip wheel finished but no Pyfhel wheel is in the cache")
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="3.5.0")
    parser.add_argument("--install", action="store_true", help="pip install the wheel too")
    args = parser.parse_args()
    wheel = cached_wheel(args.version) or build(args.version)
    if args.install:
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", str(wheel)], check=True)
    print(wheel)


if __name__ == "__main__":
    main()
