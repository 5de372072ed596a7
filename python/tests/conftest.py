"""Datasets for the Python tests, made with the `skiff` executable (SKIFF_EXE, or build/skiff)."""

import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))  # skiff_dataset.py: an independent reader


def skiff_exe():
    exe = os.environ.get("SKIFF_EXE", os.path.join(ROOT, "build", "skiff"))
    if not os.access(exe, os.X_OK):
        pytest.fail(f"the skiff executable is needed to make test datasets: {exe} "
                    "(build it with tools/build.sh, or set SKIFF_EXE)")
    return exe


def run_skiff(*args):
    subprocess.run([skiff_exe(), "-q", *map(str, args)], check=True)


@pytest.fixture(scope="session")
def small(tmp_path_factory):
    """3,000 nodes, 16 float32 features, 5 classes, partitioned into 8 with GREM."""
    path = tmp_path_factory.mktemp("data") / "small"
    run_skiff("generate", "--nodes", 3000, "--avg-degree", 8, "--feature-dim", 16, "--classes", 5,
              "--split", "0.5,0.2,0.2", "--seed", 7, "--out", path)
    run_skiff("partition", path, "-k", 8)
    return str(path)


@pytest.fixture(scope="session")
def medium(tmp_path_factory):
    """100,000 nodes, 64 float32 features (24 MiB), 32 GREM partitions: large enough for a budget
    well below the data (MEDIUM_BUDGET, with MEDIUM_MODEL_MEMORY for the model)."""
    path = tmp_path_factory.mktemp("data") / "medium"
    run_skiff("generate", "--nodes", 100000, "--avg-degree", 8, "--feature-dim", 64, "--classes",
              6, "--split", "0.1,0.05,0.05", "--seed", 5, "--out", path)
    run_skiff("partition", path, "-k", 32)
    return str(path)


MEDIUM_BUDGET = "12MiB"
MEDIUM_MODEL_MEMORY = "1MiB"


@pytest.fixture(scope="session")
def large(tmp_path_factory):
    """300,000 nodes, 128 float32 features (146 MiB), 64 GREM partitions: more than
    LARGE_BUDGET + the fixed overhead, so a loader that kept it resident breaks the promise."""
    path = tmp_path_factory.mktemp("data") / "large"
    run_skiff("generate", "--nodes", 300000, "--avg-degree", 10, "--feature-dim", 128,
              "--classes", 8, "--split", "0.05,0.01,0.01", "--seed", 9, "--out", path)
    run_skiff("partition", path, "-k", 64)
    return str(path)


LARGE_BUDGET = "48MiB"


@pytest.fixture(scope="session")
def unpartitioned(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "plain"
    run_skiff("generate", "--nodes", 1500, "--avg-degree", 6, "--feature-dim", 8, "--classes", 3,
              "--split", "0.6,0.2,0.2", "--seed", 3, "--out", path)
    return str(path)


@pytest.fixture(scope="session")
def communities(tmp_path_factory):
    """An undirected graph of 2,000 nodes in 10 communities (85% of the edges inside one), 16
    features (the community's one-hot plus noise), converted from an .npz with an edge split
    0.85/0.05/0.1 and partitioned into 8."""
    rng = np.random.default_rng(5)
    n, c, dim = 2000, 10, 16
    community = np.arange(n) % c
    src = rng.integers(0, n, 5 * n)
    inside = rng.integers(0, n // c, len(src)) * c + community[src]
    dst = np.where(rng.random(len(src)) < 0.85, inside, rng.integers(0, n, len(src)))
    keep = src != dst
    src, dst = src[keep], dst[keep]
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))])
    x = np.eye(c, dim, dtype=np.float32)[community] + rng.normal(0, 0.6, (n, dim)).astype(
        np.float32)
    base = tmp_path_factory.mktemp("link")
    np.savez(base / "communities.npz", adj_data=np.ones(len(src), np.float32),
             adj_indices=dst.astype(np.int32), adj_indptr=indptr.astype(np.int64),
             adj_shape=np.array([n, n]), attr_matrix=x, labels=community.astype(np.int64))
    path = base / "communities"
    run_skiff("convert", base / "communities.npz", path, "--undirected", "--split-edges",
              "0.85,0.05,0.1", "--split-seed", 1)
    run_skiff("partition", path, "-k", 8)
    return str(path)


@pytest.fixture(scope="session")
def medium_link(tmp_path_factory):
    """100,000 nodes, 64 features, an edge split, 32 partitions: larger than MEDIUM_BUDGET."""
    path = tmp_path_factory.mktemp("link") / "medium"
    run_skiff("generate", "--nodes", 100000, "--avg-degree", 8, "--feature-dim", 64, "--classes",
              6, "--split-edges", "0.85,0.05,0.1", "--seed", 5, "--out", path)
    run_skiff("partition", path, "-k", 32)
    return str(path)
