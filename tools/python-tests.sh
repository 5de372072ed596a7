#!/usr/bin/env bash
# The Python package's tests: `pip install .` into a fresh-or-kept virtual environment
# (build/venv), with torch and torch_geometric from PyPI (CPU use), then pytest over python/tests.
# The datasets the tests make need the `skiff` executable of tools/build.sh (build/skiff).
#
# PyPI's torch wheels bring the CUDA libraries: 5.5 GiB installed, and about 3 GiB of wheels held
# while pip installs them (torch 2.15, measured). Without SKIFF_TORCH_MIN_FREE_GIB (default 10) free
# on the disk that holds build/, torch is not installed: the script says so, loudly, and the tests
# that need torch report "skipped"; the rest run. SKIFF_PYTHON_TORCH=require turns that into a
# failure, =skip never installs torch. Nothing is kept in pip's cache (--no-cache-dir): a cached
# copy of the wheels would hold another 3 GiB.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=build/venv
want_torch=${SKIFF_PYTHON_TORCH:-auto}
min_free_gib=${SKIFF_TORCH_MIN_FREE_GIB:-10}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-cache-dir)
"${pip[@]}" install -q pytest numpy

has_torch() {
  "$venv/bin/python" -c "import torch, torch_geometric" >/dev/null 2>&1
}
if [ "$want_torch" != skip ] && ! has_torch; then
  free_gib=$(($(df -Pk build | awk 'NR == 2 { print $4 }') / 1048576))
  if [ "$free_gib" -ge "$min_free_gib" ] || [ "$want_torch" = require ]; then
    "${pip[@]}" install -q torch torch_geometric
  else
    cat >&2 <<MSG
*** tools/python-tests.sh: torch NOT installed: ${free_gib} GiB free on the disk of build/, and
*** torch from PyPI needs about ${min_free_gib} GiB while it installs. The tests that need torch
*** and torch_geometric will report "skipped". Free some space, or set SKIFF_PYTHON_TORCH=require.
MSG
  fi
fi
# The extension's build directory (build/python-<tag>, pyproject.toml) is kept between runs.
"${pip[@]}" install -q .
cd python/tests  # import the installed package, not the source tree
SKIFF_EXE="$PWD/../../build/skiff" "../../$venv/bin/python" -m pytest -q -rs -p no:cacheprovider .
