// PartitionDataset: partition a dataset's graph and rewrite the dataset in partition order.
//
// After PartitionDataset, partition p of k owns the contiguous node IDs
// [boundaries[p], boundaries[p+1]) (manifest.partitions.boundaries); within a partition nodes keep
// their original relative order. Every per-node file is rewritten in the new order:
//   graph.offsets / graph.neighbors   rows in new order, neighbour IDs relabelled and sorted
//   features.bin                      partition p's rows form one extent starting at the 4 KiB
//                                     aligned byte offset manifest.feature_extent_offsets[p]
//   labels.bin, train/valid/test.idx  relabelled (splits ascending)
//   relabel.old_ids                   int64[N]: node ID before the first partitioning of each new
//                                     ID; raw IDs are idmap(old_ids[new]) (composed across repeated
//                                     partitionings, so it always refers to the converted IDs)
//   edge_buckets.bin / .idx           every stored edge once, grouped by (source partition,
//                                     destination partition); see docs/partition.md
//   link_*.edges (an edge split)      both endpoints relabelled, pairs in their order (an
//                                     undirected pair stored again as (min, max)); the manifest's
//                                     link_split is kept
// idmap/ is copied unchanged. The output is written with format::DatasetWriter (temporary
// directory, renamed when complete), so a failure or a crash leaves the input intact and no half
// dataset.
//
// Memory: O(N) node state (about 21 bytes per node) plus chunks sized from `memory_bytes`; the edge
// and feature arrays are streamed.
//
// Thread safety: PartitionDataset may run concurrently on distinct datasets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/partition/partitioner.h"
#include "skiff/status.h"

namespace skiff::partition {

using format::kRelabelOldIdsFile;
inline constexpr const char* kEdgeBucketsFile = "edge_buckets.bin";
inline constexpr const char* kEdgeBucketsIndexFile = "edge_buckets.idx";

struct PartitionOptions {
  std::string dataset_dir;
  std::string output_dir;  // empty: replace the dataset in place
  bool overwrite = false;  // allow replacing an existing output_dir
  // k, algorithm, passes, eps, seed, order, refine, threads, balance_train. chunk_edges is derived
  // from memory_bytes; train_mask is filled from train.idx when balance_train is set.
  PartitionerOptions partitioner;
  uint64_t memory_bytes = uint64_t{1} << 30;
  bool show_progress = false;
  // false: partition and report only (no output is written); used to measure partition quality.
  bool write_layout = true;
  // Upper bound on edges per streamed chunk and per edge-bucket buffer (0: derived from
  // memory_bytes). Small values exercise the out-of-core paths in tests.
  int64_t max_chunk_edges = 0;
};

struct PartitionReport {
  std::string output_dir;
  std::string algorithm;
  int k = 0;
  std::vector<int64_t> boundaries;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int64_t cut_edges = 0;
  double edge_cut_fraction = 0;
  double imbalance = 0;        // max part size / ceil(N/k) - 1
  double train_imbalance = 0;  // the same over training nodes (0 without a train split)
  int64_t moves = 0;
  double partition_seconds = 0;  // the partitioner alone
  double seconds = 0;            // partitioning and rewriting
  uint64_t peak_memory_bytes = 0;
};

// Partitions options.dataset_dir and writes the partition-ordered dataset to options.output_dir
// (or in place). Returns the figures also recorded in the manifest. Errors: NotFound (no dataset),
// InvalidArgument (bad k / eps / output exists), ResourceExhausted (memory_bytes below the O(N)
// state), Corruption (a checksum, offset or ID in the input is wrong; names the file and offset),
// IOError.
Result<PartitionReport> PartitionDataset(const PartitionOptions& options);

// Scores an external partition (e.g. gpmetis's) of the dataset's stored edges the same way
// PartitionDataset scores its own: cut edges, cut fraction, imbalance. `part` has one entry in
// [0, k) per node. Returns InvalidArgument on a size mismatch or an entry out of range.
Result<PartitionReport> EvaluatePartition(const std::string& dataset_dir,
                                          const std::vector<int32_t>& part, int k);

}  // namespace skiff::partition
