#!/usr/bin/env bash
# Command-line misuse exits 2 (as documented) with a message naming the option; --help and
# --version exit 0; negative counts and seeds are refused instead of wrapping around, and thread
# counts above 1024 instead of failing part-way; empty paths are refused; a value a
# training option cannot take (the GPU options too, of train and predict; a number outside its
# range) exits 2 naming the option, before any work.
#   bash cli_usage_errors.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -uo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
"$SKIFF" generate --preset small --out small > /dev/null 2>&1 || { echo "FAIL: generate"; exit 1; }

expect() {  # CODE TEXT ARGS...
  local code=$1 text=$2
  shift 2
  "$SKIFF" "$@" > out.txt 2> err.txt
  local got=$?
  [ "$got" -eq "$code" ] || { echo "FAIL: skiff $* exited $got, expected $code"; cat err.txt; exit 1; }
  [ -z "$text" ] || grep -q -- "$text" err.txt || { echo "FAIL: skiff $*: no '$text'"; cat err.txt; exit 1; }
}
expect 0 "" --help
expect 0 "" --version
expect 2 "--bogus" train small --bogus
expect 2 "" train
expect 2 "--threads: must be a thread count in \[0, 1024\], got -1" train small --threads -1
expect 2 "--threads: must be a thread count in \[0, 1024\], got 100000" train small --threads 100000
expect 2 "--sampler-threads: must be a thread count" train small --sampler-threads 100000
expect 2 "--threads: must be a thread count" partition small -k 2 --threads 100000 --no-write
expect 2 "--partitions: must be at least 1, got 0" partition small -k 0 --no-write
# An empty path or size is refused, not taken as "not given".
expect 2 "--resume: must not be empty" train small --resume ""
expect 2 "--checkpoint: must not be empty" train small --checkpoint ""
expect 2 "--memory: must not be empty" train small --memory ""
expect 2 "--export-metis: must not be empty" partition small --export-metis ""
# An external partition file's bad line is named (1-based), and no number wraps around.
printf '0\n1.5\n' > bad.part
expect 1 "bad.part: line 2: expected a partition number in \[0, 2^31), got '1.5'" partition small --evaluate bad.part
printf '4294967297\n' > wrap.part
expect 1 "wrap.part: line 1: expected a partition number" partition small --evaluate wrap.part
expect 2 "--export-metis excludes --evaluate" partition small --evaluate bad.part --export-metis m.graph
expect 2 "--output excludes --no-write" partition small --no-write -o p
expect 2 "--partition-algo requires --partitions" convert edges.tsv c --partition-algo random
# Options of other input formats are refused, not ignored.
printf '0 1\n1 2\n' > edges.tsv
printf '3 2\n2\n1 3\n2\n' > tiny.graph
expect 1 "--ogb-split applies to the OGB layout, not to edgelist input" convert edges.tsv c --ogb-split x
expect 1 "--header/--no-header apply to edge lists, not to metis input" convert tiny.graph c --header
# Values no run can use are refused before any work.
expect 2 "--momentum: expected a number in \[0, 1) (got '5')" train small --optimizer sgd --momentum 5
expect 2 "--momentum: expected a number in \[0, 1) (got '1.0')" train small --optimizer sgd --momentum 1.0
expect 2 "--input-dropout: expected a number in \[0, 1) or -1 (got '-2')" train small --input-dropout -2
expect 2 "--lr: expected a number > 0 (got '-0.01')" train small --lr -0.01
expect 2 "--weight-decay: expected a number in \[0, inf) (got '-1')" train small --weight-decay -1
expect 2 "--dropout: expected a number in \[0, 1) (got '1.5')" train small --dropout 1.5
expect 2 "--seed: expected an integer >= 0 (got '-1')" train small --seed -1
expect 2 "--layers: expected an integer >= 1 (got 'two')" train small --layers two
expect 2 "--activation: unknown value 'tanh' (expected relu or elu)" train small --activation tanh
expect 2 "--passes: must not be negative, got -1" partition small -k 2 --passes -1 -o p
expect 2 "--seed: must not be negative, got -3" generate --preset small --seed -3 --out g
expect 2 "--seed: must be below 2^64, got 18446744073709551616" generate --preset small --seed 18446744073709551616 --out g
expect 2 "--cuda-matmul: unknown value 'fp16' (expected tf32 or fp32)" train small --cuda-matmul fp16
expect 2 "--device: unknown device 'tpu' (expected cpu or cuda)" train small --device tpu
expect 2 "--sampling: unknown sampling mode 'fuzzy' (expected exact or in-buffer)" train small --sampling fuzzy
expect 2 "--device-memory: expected a size such as 8GiB (got 'lots')" train small --device-memory lots
expect 2 "--device-memory: expected a size such as 8GiB (got '0')" train small --device-memory 0
expect 2 "--disk-bandwidth: 'fast' is not a read rate above zero (e.g. 1.4GiB/s)" train small --disk-bandwidth fast
expect 2 "--disk-bandwidth: '0/s' is not a read rate above zero (e.g. 1.4GiB/s)" train small --disk-bandwidth 0/s
expect 2 "--sampler: unknown value 'gpu' (expected host, device or auto)" train small --sampler gpu
expect 1 "--sampler device samples on the GPU: it needs --device cuda" train small --sampler device
expect 2 "--micro-batches: expected an integer >= 0 (got '-1')" train small --micro-batches -1
expect 1 "--micro-batches cuts the CPU model's batches" train small --micro-batches 2 --device cuda
expect 1 "--task link computes whole batches" train small --task link --micro-batches 2
expect 2 "--gpus: 'x' is not a GPU number (a list such as 0,1,2)" train small --device cuda --gpus 0,x
expect 2 "--gpus: GPU 1 is listed twice: each GPU holds one replica" train small --device cuda --gpus 1,0,1
expect 1 "--gpus needs --device cuda" train small --gpus 0
expect 1 "--gpus is not built yet with --ownership partitions" train small --device cuda --gpus 0 --ownership partitions
expect 1 "--gpus trains node classification: --task link is not built yet with it" train small --device cuda --gpus 0 --task link
expect 1 "--ownership partitions runs on --device cpu" train small --device cuda --ownership partitions
# Without a usable GPU, --device cuda stops before any planning or I/O, naming the way out.
if ! nvidia-smi -L > /dev/null 2>&1; then
  expect 1 "use --device cpu" train small --device cuda --memory 64MiB
  expect 1 "use --device cpu" train small --device cuda --sampler device
  expect 1 "use --device cpu" train small --device cuda --gpus 0
  expect 1 "use --device cpu" train small --device cuda --accumulate 2
fi
# predict takes the device options of train (and no training option), checked the same way.
"$SKIFF" train small --epochs 1 --threads 2 --checkpoint ck > /dev/null 2>&1 || { echo "FAIL: train"; exit 1; }
expect 2 "--device: unknown device 'tpu' (expected cpu or cuda)" predict small --checkpoint ck --out p --device tpu
expect 2 "--sampler: unknown value 'gpu' (expected host, device or auto)" predict small --checkpoint ck --out p --sampler gpu
expect 2 "--epochs" predict small --checkpoint ck --out p --epochs 3
expect 1 "--sampler device samples on the GPU: it needs --device cuda" predict small --checkpoint ck --out p --sampler device
expect 2 "--inference: unknown inference mode 'rows' (expected auto, layers or batches)" predict small --checkpoint ck --out p --inference rows
expect 1 "it cannot run with --device cuda; use --inference batches" predict small --checkpoint ck --out p --inference layers --device cuda
if ! nvidia-smi -L > /dev/null 2>&1; then
  expect 1 "use --device cpu" predict small --checkpoint ck --out p --device cuda
fi
# iobench checks its whole sweep before it creates or reads anything.
expect 1 "unknown pattern 'zig' (expected rand, seq or stride)" iobench raw f.bin --create-file 1MiB --pattern zig
expect 1 "--stride: expected a size such as 4KiB (got 'x')" iobench raw f.bin --create-file 1MiB --stride x
expect 1 "--duration: expected a positive number of seconds (got nan)" iobench raw f.bin --create-file 1MiB --duration nan
expect 1 "--create-file f.bin needs about 1000.00 TiB" iobench raw f.bin --create-file 1000TiB
echo mine > mine.bin
expect 1 "--create-file: mine.bin exists" iobench raw mine.bin --create-file 1MiB
[ "$(cat mine.bin)" = mine ] || { echo "FAIL: --create-file replaced an existing file"; exit 1; }
expect 1 "--fanout: expected at most 10000 (got 4294967295)" iobench replay small --memory 64MiB --fanout 4294967295
[ ! -e p ] && [ ! -e g ] && [ ! -e f.bin ] && [ ! -e c ] || { echo "FAIL: a refused command wrote output"; exit 1; }
echo "cli usage errors: OK"
