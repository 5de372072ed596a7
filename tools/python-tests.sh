#!/usr/bin/env bash
# The Python package's tests: `pip install .` into a fresh-or-kept virtual environment
# (build/venv), with torch and torch_geometric from PyPI (CPU use; the tests that need them are
# never skipped here), then pytest over python/tests. The datasets the tests make need the `skiff`
# executable of tools/build.sh (build/skiff).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=build/venv
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install -q pytest numpy torch torch_geometric
# The extension's build directory (build/python-<tag>, pyproject.toml) is kept between runs.
"${pip[@]}" install -q .
cd python/tests  # import the installed package, not the source tree
SKIFF_EXE="$PWD/../../build/skiff" "../../$venv/bin/python" -m pytest -q -p no:cacheprovider .
