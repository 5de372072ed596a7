#!/usr/bin/env python3
"""Runs a command and checks a memory promise: its peak RSS (the largest of the process and the
descendants it waited for, to process exit) is at most BUDGET + OVERHEAD bytes.

    python3 peak_rss_within.py BUDGET OVERHEAD LOG -- COMMAND [ARG...]

Writes the command's stdout and stderr to LOG, prints the budget, the peak and the promise, and
exits non-zero (with the log) if the command fails or breaks the promise. A pipeline is one
command: `bash -c "zcat x.gz | skiff ..."`.
"""
import resource
import subprocess
import sys

budget, overhead, log_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
assert sys.argv[4] == "--", "usage: peak_rss_within.py BUDGET OVERHEAD LOG -- COMMAND..."
run = subprocess.run(sys.argv[5:], capture_output=True, text=True)
log = run.stdout + run.stderr
with open(log_path, "w") as f:
    f.write(log)
if run.returncode != 0:
    sys.exit(f"command failed ({run.returncode}):\n{log}")
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
print(f"budget {budget / 2**20:.1f} MiB, peak RSS {peak / 2**20:.1f} MiB "
      f"(promise {(budget + overhead) / 2**20:.1f} MiB)")
if peak > budget + overhead:
    sys.exit(f"peak RSS {peak} > budget {budget} + {overhead}")
