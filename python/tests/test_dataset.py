"""skiff.open / skiff.Dataset against an independent reader of the same files."""

import numpy as np
import pytest

import skiff
from skiff_dataset import SkiffDataset


def test_counts_splits_labels(small):
    ds = skiff.open(small)
    ref = SkiffDataset(small)
    assert (ds.num_nodes, ds.num_edges, ds.feature_dim, ds.num_classes) == (
        ref.num_nodes, ref.num_edges, ref.feature_dim, ref.num_classes)
    assert ds.num_partitions == 8 and ds.partition_algorithm == "grem"
    b = ds.partition_boundaries()
    assert b[0] == 0 and b[-1] == ds.num_nodes and np.all(np.diff(b) >= 0)
    train, valid, test = (ds.split(s) for s in ("train", "valid", "test"))
    assert train.dtype == np.int64 and len(train) > 0
    assert len(np.intersect1d(train, valid)) == 0 and len(np.intersect1d(train, test)) == 0
    labels = ds.labels()
    assert labels.dtype == np.int32 and labels.shape == (ds.num_nodes,)
    assert np.array_equal(labels, ref.labels())
    assert np.array_equal(train, ref.split("train"))
    assert ds.num_bytes > ds.num_nodes * ds.feature_dim * 4


def test_read_rows_match_the_feature_file(small):
    ds = skiff.open(small)
    ref = SkiffDataset(small).features()
    ids = np.array([5, 6, 7, 2999, 0, 6, 1234], dtype=np.int64)  # runs, repeats, any order
    rows = ds.read_rows(ids, as_torch=False)
    assert rows.dtype == np.float32 and rows.shape == (len(ids), ds.feature_dim)
    assert np.array_equal(rows, ref[ids])


def test_float16_rows_come_as_float32(tmp_path):
    from conftest import run_skiff
    path = tmp_path / "half"
    run_skiff("generate", "--nodes", 500, "--feature-dim", 8, "--feature-dtype", "float16",
              "--seed", 2, "--out", path)
    ds = skiff.open(path)
    assert ds.feature_dtype == "float16"
    rows = ds.read_rows(np.arange(500), as_torch=False)
    assert rows.dtype == np.float32
    assert np.array_equal(rows, SkiffDataset(str(path)).features().astype(np.float32))


def test_raw_ids_follow_the_relabelling(small, unpartitioned):
    # A generated dataset has no ID map: its raw IDs are the IDs before partitioning.
    ds = skiff.open(small)
    raw = ds.raw_ids(np.arange(ds.num_nodes))
    assert sorted(int(r) for r in raw) == list(range(ds.num_nodes))
    plain = skiff.open(unpartitioned)
    assert plain.raw_ids([0, 7, 3]) == ["0", "7", "3"]


def test_errors_name_what_is_wrong(small, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        skiff.open(tmp_path / "nowhere")
    ds = skiff.open(small)
    with pytest.raises(ValueError, match="'training' is not one of"):
        ds.split("training")
    with pytest.raises(ValueError, match=r"ids\[1\] = 3000 is not a node"):
        ds.read_rows([1, 3000])
    with pytest.raises(ValueError, match="node -1 is not in"):
        ds.raw_ids([-1])
    with pytest.raises(ValueError, match="is not a size"):
        skiff.parse_bytes("lots")
    assert skiff.parse_bytes("2MiB") == 2 << 20


def test_corruption_is_reported_with_the_file(tmp_path):
    from conftest import run_skiff
    path = tmp_path / "bad"
    run_skiff("generate", "--nodes", 300, "--feature-dim", 4, "--seed", 1, "--out", path)
    with open(path / "features.bin", "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xFF]))
    ds = skiff.open(path)
    with pytest.raises(skiff.Error, match="features.bin"):
        ds.read_rows([0, 1, 2])
    with pytest.raises(skiff.Error, match="features.bin"):
        ds.verify()
