#!/usr/bin/env bash
# A conversion stopped by SIGTERM (or Ctrl-C: unit test_interrupt.cpp) removes its staging
# directory and lock file before it ends, exits by the signal (143), prints one line saying so,
# and leaves no output. Twice: a plain conversion, and one with --partitions (which stages the
# unpartitioned dataset beside the output). The input is a FIFO that is kept open, so the run is
# caught in the middle of reading it.
#   bash convert_interrupted.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
fail() { echo "FAIL: $*"; exit 1; }

for variant in plain partitioned; do
  mkdir "$variant" && cd "$variant"
  mkfifo in.fifo
  extra=()
  [ "$variant" = partitioned ] && extra=(--partitions 2)
  "$SKIFF" convert in.fifo out --format edgelist "${extra[@]}" > run.out 2> run.err &
  pid=$!
  exec 3<> in.fifo  # read-write: does not wait for skiff to open its end (Linux)
  printf '0 1\n1 2\n2 0\n' >&3
  for _ in $(seq 200); do
    compgen -G "*.tmp-$pid" > /dev/null && break
    sleep 0.1
  done
  compgen -G "*.tmp-$pid" > /dev/null || fail "$variant: no staging directory appeared"
  kill -TERM "$pid"
  rc=0
  wait "$pid" || rc=$?
  exec 3>&-
  [ "$rc" -eq 143 ] || fail "$variant: exit status $rc, expected 143 (SIGTERM)"
  left=$(ls -A | grep -v -x -e in.fifo -e run.out -e run.err || true)
  [ -z "$left" ] || fail "$variant: left behind: $left"
  grep -q "interrupted (Terminated): removing what this run was writing" run.err ||
    fail "$variant: no message: $(cat run.err)"
  [ "$(wc -l < run.err)" -eq 1 ] || fail "$variant: more than the one line: $(cat run.err)"
  cd ..
done
echo "convert interrupted: OK"
