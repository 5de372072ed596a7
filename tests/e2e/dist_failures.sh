#!/usr/bin/env bash
# A rank that dies or stops ends the whole `mpirun ... skiff train --distributed` job, never a
# hang: SIGKILL of rank 1 mid-run ends the job in under 30 s, naming the rank, and the last
# checkpoint is intact and resumes; a stopped rank (SIGSTOP) is caught by --dist-timeout, whose
# message names the operation and the silent rank. Both with replicated data and with owned
# partitions (whose ranks also exchange rows each hop). CUDA ranks on a machine without a GPU stop
# with the reason. (`timeout` only guards against a hang.)
#   bash dist_failures.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found (Debian: openmpi-bin)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
MPI=(timeout 300 mpirun --oversubscribe --allow-run-as-root)
"$SKIFF" generate --preset small --out small > /dev/null 2>&1
"$SKIFF" partition small -k 4 -o smallp > /dev/null 2>&1
if ! "${MPI[@]}" -np 1 "$SKIFF" train small --epochs 0 --distributed > probe.log 2>&1; then
  if grep -q "has no MPI" probe.log; then echo "SKIP: skiff was built without MPI"; exit 77; fi
  echo "FAIL: a one-rank job did not run"; cat probe.log; exit 1
fi

# Starts a 2-rank job in the background, each rank writing its pid to pid.RANK; returns once
# epoch 0's checkpoint is written.
start_job() {
  rm -f pid.* ck.bin* m.jsonl
  "${MPI[@]}" -np 2 bash -c 'echo $$ > pid.$OMPI_COMM_WORLD_RANK; exec "$0" "$@"' "$SKIFF" \
    "${RUN[@]}" "$@" > job.log 2>&1 &
  JOB=$!
  for _ in $(seq 600); do
    [ -s m.jsonl ] && [ -s pid.1 ] && return 0
    kill -0 $JOB 2> /dev/null || { echo "FAIL: the job ended early"; cat job.log; exit 1; }
    sleep 0.5
  done
  echo "FAIL: no epoch finished"; cat job.log; exit 1
}

for MODE in replicated owned; do
  DS=small
  OWN=()
  [ $MODE = owned ] && DS=smallp && OWN=(--ownership partitions)
  # Small batches: many steps (exchanges) per epoch; many epochs: the job is still running when a
  # rank is signalled.
  RUN=(train $DS --hidden 16 --fanouts 5,5 --eval-fanouts 5,5 --batch-size 64 --epochs 1000
       --seed 5 --threads 1 --distributed --checkpoint ck.bin --metrics m.jsonl "${OWN[@]}")
  # SIGKILL: the job ends within 30 s (the bound the design names), naming rank 1.
  start_job
  RANK1=$(cat pid.1)
  kill -KILL "$RANK1"
  killed_at=$(date +%s)
  status=0
  wait $JOB || status=$?
  elapsed=$(($(date +%s) - killed_at))
  [ $status -ne 0 ] || { echo "FAIL: the job succeeded after a rank was killed"; exit 1; }
  [ $status -ne 124 ] || { echo "FAIL: the job hung"; cat job.log; exit 1; }
  [ $elapsed -lt 30 ] || { echo "FAIL: the job took ${elapsed}s to end"; exit 1; }
  grep -q "rank 1" job.log || { echo "FAIL: rank 1 is not named"; cat job.log; exit 1; }
  echo "$MODE: SIGKILL of rank 1: the job ended in ${elapsed}s"
  # The checkpoint is intact (read back whole, checksum verified) and the run resumes.
  "$SKIFF" predict $DS --checkpoint ck.bin.last --out pred --threads 1 > predict.log 2>&1 ||
    { echo "FAIL: the last checkpoint does not read"; cat predict.log; exit 1; }
  done_epochs=$(wc -l < m.jsonl)
  "${MPI[@]}" -np 2 "$SKIFF" train $DS --resume ck.bin --epochs $((done_epochs + 1)) \
    --distributed --threads 1 --metrics m.jsonl > resume.log 2>&1 ||
    { echo "FAIL: resume after the kill"; cat resume.log; exit 1; }
  grep -q "resuming after epoch" resume.log || { echo "FAIL: resume"; cat resume.log; exit 1; }
  echo "$MODE: the last checkpoint resumes: OK"

  # SIGSTOP: the other rank's exchange times out (--dist-timeout), naming the operation and rank 1.
  start_job --dist-timeout 5
  RANK1=$(cat pid.1)
  kill -STOP "$RANK1"
  status=0
  wait $JOB || status=$?
  kill -KILL "$RANK1" 2> /dev/null || true  # should MPI have left it stopped
  [ $status -ne 0 ] || { echo "FAIL: the job succeeded with a stopped rank"; exit 1; }
  [ $status -ne 124 ] || { echo "FAIL: the job hung"; cat job.log; exit 1; }
  # Rank 0 names the exchange (whichever the stop caught: gradients in training, counts in
  # evaluation) and rank 1: it heard nothing from it, or rank 1 stopped before receiving rank 0's part.
  grep -q "rank 0 of 2: .*[a-z]* #[0-9]* (.*) did not complete within 5 s (--dist-timeout): .*rank 1 " \
    job.log || { echo "FAIL: the timeout does not name the rank"; cat job.log; exit 1; }
  echo "$MODE: SIGSTOP of rank 1: caught by --dist-timeout: OK"
done

# CUDA ranks on a machine without a usable GPU: every rank stops with the reason, never a hang.
if ! nvidia-smi -L > /dev/null 2>&1; then
  status=0
  "${MPI[@]}" -np 2 "$SKIFF" train small --device cuda --distributed --threads 1 > cuda.log 2>&1 ||
    status=$?
  [ $status -ne 0 ] && [ $status -ne 124 ] || { echo "FAIL: CUDA ranks without a GPU: $status"; cat cuda.log; exit 1; }
  grep -q "no usable CUDA device\|has no CUDA support" cuda.log ||
    { echo "FAIL: CUDA ranks without a GPU do not say why"; cat cuda.log; exit 1; }
  echo "CUDA ranks without a GPU: refused with the reason: OK"
fi
