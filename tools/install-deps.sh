#!/usr/bin/env bash
# Installs Skiff's build dependencies from Debian 12 packages (only those that are missing).
# Run as root, or as a user with sudo. CUDA is optional and is not installed here: when nvcc is on
# PATH (or in /usr/local/cuda/bin) the build picks it up.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git
          liburing-dev librocksdb-dev libcli11-dev doctest-dev nlohmann-json3-dev
          libopenblas-dev libxxhash-dev zlib1g-dev libzip-dev libtomlplusplus-dev python3
          python3-dev python3-venv python3-pip  # the Python package (pip install .)
          openmpi-bin libopenmpi-dev  # skiff train --distributed (optional: built when found)
          clang libclang-rt-14-dev)  # the last two: libFuzzer targets (tools/fuzz.sh)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all build dependencies are present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
