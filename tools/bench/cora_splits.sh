# Sourced by the Cora benchmark scripts: the random splits they share.
#   cora_splits SKIFF WORK SEEDS
# converts ../shared/datasets/cora.npz into WORK/cora-S for S in [0, SEEDS): undirected, 20 per class
# train / 30 per class valid / the rest test, split seed S. Splits already there are kept.
cora_splits() {
  local skiff="$1" work="$2" seeds="$3" s
  local cora
  cora="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/../shared/datasets/cora.npz"
  mkdir -p "$work"
  for ((s = 0; s < seeds; s++)); do
    [[ -f "$work/cora-$s/manifest.json" ]] ||
      "$skiff" convert "$cora" "$work/cora-$s" --undirected --split per-class:20,30 --seed "$s" \
        --overwrite > /dev/null 2>&1
  done
}
