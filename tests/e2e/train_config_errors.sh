#!/usr/bin/env bash
# `skiff train --config`: keys under a [section] and a config path that is not a file are errors
# naming the file (they used to be ignored silently); top-level keys apply.
#   bash train_config_errors.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
"$SKIFF" generate --preset small --out small > /dev/null 2>&1
DATA=small

printf '[model]\nhidden = 64\n' > section.toml
if "$SKIFF" train "$DATA" --config section.toml --epochs 1 > s.out 2> s.err; then
  echo "FAIL: a key under [model] was accepted"; exit 1
fi
grep -q 'section.toml: key "hidden" is under \[model\]' s.err

mkdir adir
if "$SKIFF" train "$DATA" --config adir --epochs 1 > d.out 2> d.err; then
  echo "FAIL: a directory was accepted as --config"; exit 1
fi
grep -q "config adir: not a regular file" d.err

printf 'hidden = 16\nepochs = 1\n' > ok.toml
"$SKIFF" train "$DATA" --config ok.toml --metrics m.jsonl > ok.out 2>&1
grep -q "trained 1 epochs" ok.out
echo "train --config errors: OK"
