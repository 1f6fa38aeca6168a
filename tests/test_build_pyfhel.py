"""The offline Pyfhel build patch applies to the sdist's pyproject shape."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("build_pyfhel", ROOT / "tools" / "build_pyfhel.py")
build_pyfhel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_pyfhel)

SHAPE = """
    [cpplibraries.SEAL.cmake_opts]
    CMAKE_BUILD_TYPE = 'Release'
  [cpplibraries.Afhel]
  extra_link_args = [
    {Linux = ["-Wl,-rpath=$ORIGIN/.", "-fopenmp"]} ]
[extensions.config]
extra_link_args = [
  {Linux = ["-Wl,-rpath=$ORIGIN/.", "-fopenmp"]},
]
"""


def test_patch_turns_off_dependency_download_and_links_zstd():
    out = build_pyfhel.patch_pyproject(SHAPE)
    assert "SEAL_BUILD_DEPS = 'OFF'" in out
    assert out.count('"-lzstd", "-lz"') == 2
    assert build_pyfhel.patch_pyproject(out).count("SEAL_BUILD_DEPS") == 1


def test_patch_refuses_an_unknown_shape():
    with pytest.raises(SystemExit, match="changed shape"):
        build_pyfhel.patch_pyproject("[cpplibraries.SEAL.cmake_opts]\n")
