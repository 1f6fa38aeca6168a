#!/usr/bin/env bash
# Install hebench and everything it measures, on a fresh Debian machine with Python 3.10+.
# Order matters: the CPU build of torch first (a looser pin pulls gigabytes of CUDA wheels),
# then Pyfhel from its sdist with the offline build patch (cached wheel), then hebench.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }

# (PyPI's torchvision links CUDA libraries and cannot import beside CPU torch, so check it is installed, not importable;
#  hebench.models.language hides such a torchvision from transformers and peft, core dependencies installed below)
{ "$PY" -c "import torch" && "$PY" -m pip show -q torchvision; } >/dev/null 2>&1 || pip_install "torch==2.13.0" "torchvision==0.28.0"

if ! "$PY" -c "import Pyfhel" 2>/dev/null; then
  if command -v apt-get >/dev/null && ! dpkg -s libmsgsl-dev libzstd-dev >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq libmsgsl-dev libzstd-dev >/dev/null
  fi
  "$PY" tools/build_pyfhel.py --install || echo "warning: Pyfhel could not be built; its adapters will be listed as unavailable" >&2
fi

pip_install -e ".[test,flower,dp]"
command -v pyenv >/dev/null && pyenv rehash || true
