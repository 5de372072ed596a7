#!/usr/bin/env python3
"""Writes an OGB link-prediction split's torch files as NumPy archives skiff convert reads.

OGB's link-prediction datasets (ogbl-collab, -ppa, -ddi, -citation2, ...) ship their edge split as
torch pickles: DIR/split/<name>/{train,valid,test}.pt, each a dict of arrays ("edge",
"edge_neg", "source_node", "target_node", "target_node_neg", "weight", "year"). skiff reads no
pickles; this script, run once where torch is installed, writes each as a .npz beside it with the
same keys (C-order arrays, values unchanged):

    python3 tools/ogb/link_splits_to_npz.py DIR [--split NAME]

then `skiff convert DIR --format ogb -o OUT` imports the split (docs/convert.md, "OGB"). An existing
.npz is left alone unless --force is given. Needs torch and numpy.
"""
import argparse
import os
import sys


def to_numpy(value, where):
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray):
        raise SystemExit(f"{where}: not an array but {type(value).__name__}")
    return np.ascontiguousarray(value)


def convert(pt_path, force):
    import numpy as np
    import torch

    out = pt_path[:-3] + ".npz"
    if os.path.exists(out) and not force:
        print(f"{out}: exists, left alone (--force rewrites it)")
        return
    try:
        split = torch.load(pt_path, map_location="cpu", weights_only=False)
    except TypeError:  # torch older than 1.13 has no weights_only
        split = torch.load(pt_path, map_location="cpu")
    if not isinstance(split, dict):
        raise SystemExit(f"{pt_path}: expected a dict of arrays, found {type(split).__name__}")
    arrays = {str(k): to_numpy(v, f"{pt_path}[{k!r}]") for k, v in split.items()}
    tmp = out + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, out)  # whole or not at all
    shapes = ", ".join(f"{k} {tuple(a.shape)} {a.dtype}" for k, a in arrays.items())
    print(f"{out}: {shapes}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="the OGB dataset directory (holding raw/ and split/)")
    parser.add_argument("--split", help="split/<NAME> (default: every split directory)")
    parser.add_argument("--force", action="store_true", help="rewrite existing .npz files")
    args = parser.parse_args()
    root = os.path.join(args.dataset, "split")
    if not os.path.isdir(root):
        raise SystemExit(f"{args.dataset}: no split/ directory (an OGB dataset holds split/<name>/)")
    names = [args.split] if args.split else sorted(os.listdir(root))
    done = 0
    for name in names:
        directory = os.path.join(root, name)
        if not os.path.isdir(directory):
            raise SystemExit(f"{directory}: no such split directory")
        for part in ("train", "valid", "test"):
            pt_path = os.path.join(directory, part + ".pt")
            if os.path.exists(pt_path):
                convert(pt_path, args.force)
                done += 1
    if done == 0:
        raise SystemExit(f"{root}: no train.pt, valid.pt or test.pt found")


if __name__ == "__main__":
    sys.exit(main())
