"""tools/ogb/link_splits_to_npz.py: OGB's link-prediction split files (torch pickles of dicts of
numpy arrays or tensors) rewritten as .npz with the same keys and values, which `skiff convert`
then imports as the dataset's edge split."""

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # tools/python-tests.sh installs it where the disk allows

from conftest import ROOT, run_skiff, skiff_exe

SCRIPT = os.path.join(ROOT, "tools", "ogb", "link_splits_to_npz.py")


def make_layout(root):
    """A 40-node ring with chords as OGB lays a link dataset out: the graph holds the train edges."""
    ring = [(v, (v + 1) % 40) for v in range(40)] + [(v, (v + 7) % 40) for v in range(40)]
    valid, test, train = ring[:4], ring[4:10], ring[10:]
    os.makedirs(root / "raw")
    os.makedirs(root / "split" / "time")
    with gzip.open(root / "raw" / "edge.csv.gz", "wt") as f:
        f.writelines(f"{u},{v}\n" for u, v in train)
    with gzip.open(root / "raw" / "num-node-list.csv.gz", "wt") as f:
        f.write("40\n")
    neg = np.array([(0, 20), (1, 21), (2, 22), (3, 23)])
    splits = {
        # Tensors, as ogbl-citation2's files hold, and numpy arrays, as ogbl-collab's.
        "train": {"edge": torch.tensor(train), "year": torch.arange(len(train))},
        "valid": {"edge": np.array(valid), "edge_neg": neg},
        "test": {"edge": np.array(test, dtype=np.int32), "edge_neg": neg + 10},
    }
    for name, split in splits.items():
        torch.save(split, root / "split" / "time" / f"{name}.pt")
    return splits


def test_splits_rewritten_then_imported(tmp_path):
    root = tmp_path / "ogbl-ring"
    splits = make_layout(root)
    # Without the .npz files, convert names the script.
    refused = subprocess.run([skiff_exe(), "convert", root, tmp_path / "refused"],
                             capture_output=True, text=True)
    assert refused.returncode != 0
    assert "tools/ogb/link_splits_to_npz.py" in refused.stderr
    subprocess.run([sys.executable, SCRIPT, str(root)], check=True, capture_output=True)
    for name, split in splits.items():
        with np.load(root / "split" / "time" / f"{name}.npz") as got:
            assert sorted(got.files) == sorted(split)
            for key, value in split.items():
                want = value.numpy() if isinstance(value, torch.Tensor) else value
                assert got[key].dtype == want.dtype and np.array_equal(got[key], want), key
    # A second run leaves the archives alone.
    again = subprocess.run([sys.executable, SCRIPT, str(root)], check=True, capture_output=True,
                           text=True)
    assert "left alone" in again.stdout
    out = tmp_path / "ds"
    run_skiff("convert", root, out, "--undirected")
    info = subprocess.run([skiff_exe(), "info", out, "--verify"], check=True,
                          capture_output=True, text=True).stdout
    assert "train 70 / valid 4 / test 6 pairs, non-edges 4 / 4 (given by the input)" in info
    assert "verify       OK" in info
