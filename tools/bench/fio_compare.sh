#!/usr/bin/env bash
# Compares `skiff iobench raw` with fio on the same file, block size, queue depth and duration,
# random reads with O_DIRECT (fio: ioengine=io_uring, direct=1). Runs alternate (fio, skiff, skiff
# with fixed buffers, then the reverse order in the next round) so drift on a noisy machine hits
# every tool alike; the table shows each round's MB/s and the ratio skiff / fio of the medians.
#
# Usage: tools/bench/fio_compare.sh SKIFF_EXE FILE [SIZE] [SECONDS] [ROUNDS]
#   FILE is created with SIZE random bytes (default 2GiB) when it does not exist. Put it on the disk
#   to measure (not tmpfs). SECONDS per run (default 10), ROUNDS (default 2).
set -euo pipefail
skiff=${1:?usage: fio_compare.sh SKIFF_EXE FILE [SIZE] [SECONDS] [ROUNDS]}
file=${2:?usage: fio_compare.sh SKIFF_EXE FILE [SIZE] [SECONDS] [ROUNDS]}
size=${3:-2GiB}
secs=${4:-10}
rounds=${5:-2}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
[[ -e "$file" ]] || "$skiff" iobench raw "$file" --create-file "$size" --duration 0.01 --bs 4KiB --qd 1 >/dev/null

run_fio() {  # bs qd -> MB/s
  fio --name=cmp --filename="$file" --ioengine=io_uring --direct=1 --rw=randread --bs="$1" \
    --iodepth="$2" --runtime="$secs" --time_based --norandommap --randrepeat=0 --numjobs=1 \
    --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]/1e6))'
}
run_skiff() {  # engine bs qd -> MB/s
  "$skiff" iobench raw "$file" --engine "$1" --bs "$2" --qd "$3" --duration "$secs" --json 2>/dev/null |
    python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)[0]["mb_per_s"])'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
echo "file: $file ($(stat -c %s "$file") bytes) on $(df --output=source,fstype "$file" | tail -1 | tr -s ' ')"
echo "each run: ${secs}s random reads, O_DIRECT; $rounds rounds, alternating order"
printf '%-12s %-26s %-26s %-26s %8s %8s\n' setting "fio MB/s" "skiff uring MB/s" "skiff uring-fixed MB/s" ratio ratio-fx
for setting in "4KiB 4k 64" "1MiB 1m 16"; do
  read -r sbs fbs qd <<<"$setting"
  f=(); s=(); x=()
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then
      f+=("$(run_fio "$fbs" "$qd")"); s+=("$(run_skiff uring "$sbs" "$qd")"); x+=("$(run_skiff uring-fixed "$sbs" "$qd")")
    else
      x+=("$(run_skiff uring-fixed "$sbs" "$qd")"); s+=("$(run_skiff uring "$sbs" "$qd")"); f+=("$(run_fio "$fbs" "$qd")")
    fi
  done
  mf=$(median "${f[@]}"); ms=$(median "${s[@]}"); mx=$(median "${x[@]}")
  printf '%-12s %-26s %-26s %-26s %8.3f %8.3f\n' "bs=$sbs qd=$qd" "${f[*]}" "${s[*]}" "${x[*]}" \
    "$(echo "$ms / $mf" | bc -l)" "$(echo "$mx / $mf" | bc -l)"
done
