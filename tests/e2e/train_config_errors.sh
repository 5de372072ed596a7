#!/usr/bin/env bash
# `skiff train --config`: keys under a [section], a TOML syntax error and a config path that is not
# a file are errors naming the file (and the line and column), a bad value names the key and the
# option; top-level keys apply, a list option from an array.
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
grep -q 'section.toml: \[model\] is a section' s.err

# A syntax error is reported as one, with its line and column.
printf 'hidden = [1,\nepochs = 2\n' > syntax.toml
if "$SKIFF" train "$DATA" --config syntax.toml > x.out 2> x.err; then
  echo "FAIL: a TOML syntax error was accepted"; exit 1
fi
grep -q "syntax.toml: line 2, column 1: TOML syntax error" x.err

mkdir adir
if "$SKIFF" train "$DATA" --config adir --epochs 1 > d.out 2> d.err; then
  echo "FAIL: a directory was accepted as --config"; exit 1
fi
grep -q "config adir: not a regular file" d.err

# A config file cannot name another (it was silently ignored).
printf 'config = "other.toml"\n' > nested.toml
if "$SKIFF" train "$DATA" --config nested.toml --epochs 1 > n.out 2> n.err; then
  echo "FAIL: config = ... inside a config file was accepted"; exit 1
fi
grep -q 'nested.toml: "config" cannot be set from a config file' n.err

# An empty list (a value CLI11 cannot take: it read past the end for a flag) is an error.
printf 'fanouts = []\n' > empty.toml
if "$SKIFF" train "$DATA" --config empty.toml --epochs 1 > e.out 2> e.err; then
  echo "FAIL: an empty list was accepted"; exit 1
fi
grep -q 'empty.toml: key "fanouts": an empty list' e.err

# A value the option cannot take names the key and the option.
printf 'epochs = 1\nlayers = "two"\n' > value.toml
if "$SKIFF" train "$DATA" --config value.toml > v.out 2> v.err; then
  echo "FAIL: layers = \"two\" was accepted"; exit 1
fi
grep -q "value.toml: key \"layers\": --layers: expected an integer >= 1 (got 'two')" v.err

# An array for a list option (fanouts) is its comma-separated text; the options reach the run.
printf 'hidden = 16\nepochs = 1\nfanouts = [5, 3]\nactivation = "elu"\n' > ok.toml
"$SKIFF" train "$DATA" --config ok.toml --metrics m.jsonl --checkpoint ok.ckpt > ok.out 2>&1
grep -q "trained 1 epochs" ok.out
grep -q "fanouts 5,3" ok.out
echo "train --config errors: OK"
