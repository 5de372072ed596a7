#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit, end-to-end, and GPU tests,
# which report "skipped" without a CUDA device), then the Python package's tests
# (tools/python-tests.sh: pip install . into build/venv, with torch and torch_geometric).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh "$@"
cd build
ctest --output-on-failure -j "$(nproc)"
cd ..
bash tools/python-tests.sh
