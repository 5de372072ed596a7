// DatasetPartitionSource: the partitions of a Skiff dataset, as the buffer pool reads them.
//
// Partition p owns nodes [first_node(p), first_node(p+1)): the manifest's partition boundaries on a
// partitioned dataset, fixed-size node ranges (`nodes_per_partition`) on an unpartitioned one.
// Its extents, in this order:
//   kFeatureExtent    the feature rows of its nodes in features.bin (one extent: rows of a
//                     partition are contiguous, starting at Manifest::feature_extent_offsets[p] on
//                     a partitioned dataset);
//   kNeighborExtent   the CSR neighbour lists of its nodes in graph.neighbors
//                     (neighbors[offsets[first] .. offsets[last+1]) ).
// Files are opened with O_DIRECT (buffered, with a warning, where the file system refuses).
// Verify() checks the dataset's per-block XXH3 checksums, and then what sampling and gathering rely
// on (format/content_checks.h): every neighbour ID in [0, N) and every feature value finite, so
// every byte the pool hands out has been verified and checked. The CSR offsets (8 bytes per node)
// are loaded into memory at Open (checked by Dataset::LoadOffsets: from 0 to E, never
// decreasing), which lets the source find any node's adjacency list for fine-grained reads. A
// source over a range of partitions (DatasetPartitionSourceOptions::first_partition) loads the
// offsets of their nodes alone; its node-indexed calls take nodes of that range only (global IDs).
//
// On a shard (format::ShardInfo) the files are windows of the whole dataset's: the extents and fine
// reads this source hands the pool are positions in the files as stored (the whole file's offset
// less the window's start), and Verify takes them back to the whole file's for the checksums and
// the error messages. A shard's source takes a range within the shard's partitions.
//
// Thread safety: immutable after Open; const methods may be called from many threads. The dataset
// must outlive the source.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/prefetch.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/partition_source.h"

namespace skiff::storage {

struct DatasetPartitionSourceOptions {
  bool direct = true;               // O_DIRECT
  int64_t nodes_per_partition = 0;  // unpartitioned datasets: 0 = split into 16 ranges
  // Partitions are their adjacency only (an empty feature extent): for a model that holds every
  // feature row on its device, the pool's slots then hold only what sampling reads. Feature rows
  // are still readable fine-grained (FeatureRowRead).
  bool adjacency_only = false;
  // Only the dataset's partitions [first_partition, end_partition) (0: to the last), renumbered
  // from 0: the pool, the pins and every node-indexed call see those alone, and the offsets of
  // their nodes alone are loaded (a rank of an owned-partition run, train/node_ranges.h). A range
  // needs a partitioned dataset.
  uint32_t first_partition = 0;
  uint32_t end_partition = 0;
};

class DatasetPartitionSource final : public PartitionSource {
 public:
  static constexpr uint32_t kFeatureFile = 0;
  static constexpr uint32_t kNeighborFile = 1;
  static constexpr size_t kFeatureExtent = 0;
  static constexpr size_t kNeighborExtent = 1;

  // NotFound when the dataset lacks features.bin / graph.neighbors; I/O errors from opening.
  static Result<std::unique_ptr<DatasetPartitionSource>> Open(
      const format::Dataset* dataset, const DatasetPartitionSourceOptions& options);

  uint32_t num_partitions() const override { return static_cast<uint32_t>(boundaries_.size() - 1); }
  uint32_t num_files() const override { return 2; }
  const ReadFile& file(uint32_t index) const override { return files_[index]; }
  std::vector<Extent> Extents(uint32_t partition) const override;
  uint32_t read_alignment() const override { return read_alignment_; }
  Status Verify(uint32_t index, uint64_t offset, const std::byte* data,
                uint64_t bytes) const override;

  int64_t first_node(uint32_t partition) const { return boundaries_[partition]; }
  // The nodes this source covers: [begin_node(), end_node()) (all of them without a range).
  int64_t begin_node() const { return boundaries_.front(); }
  int64_t end_node() const { return boundaries_.back(); }
  // Whether a pinned partition's kFeatureExtent holds its feature rows (not adjacency_only).
  bool partitions_hold_features() const { return !adjacency_only_; }
  uint32_t partition_of(int64_t node) const;
  int64_t degree(int64_t node) const { return Offset(node + 1) - Offset(node); }
  // Start loading node's degree entry / its row in a pinned partition (PrefetchRead hints).
  void PrefetchDegree(int64_t node) const { PrefetchRead(offsets_.data() + (node - begin_node())); }
  void PrefetchRowFromPin(const PartitionPin& pin, int64_t node) const;
  // Neighbour ids of `node` read from a pinned partition's neighbour extent (widened to int64).
  void NeighborsFromPin(const PartitionPin& pin, int64_t node, std::vector<int64_t>* out) const;
  // The neighbours of `node` at `positions` (each in [0, degree)) from a pinned partition: only
  // those entries are decoded (the sampler's hot path).
  void NeighborsAtFromPin(const PartitionPin& pin, int64_t node, std::span<const int64_t> positions,
                          int64_t* out) const;
  // Fine-grained reads of one feature row / one adjacency list (raw neighbour dtype) into dst.
  FineRead FeatureRowRead(int64_t node, void* dst) const;
  FineRead AdjacencyRead(int64_t node, void* dst) const;
  uint64_t neighbor_bytes() const { return neighbor_bytes_; }
  const format::Manifest& manifest() const { return dataset_->manifest(); }

 private:
  DatasetPartitionSource() = default;
  // Verify's content checks of `bytes` bytes read at `offset` of graph.neighbors / features.bin.
  Status CheckNeighborIds(uint64_t offset, const std::byte* data, uint64_t bytes) const;
  Status CheckFeatureValues(uint64_t offset, const std::byte* data, uint64_t bytes) const;
  // Keeps the partitions [first, end) of boundaries_ (end 0: to the last); InvalidArgument for a
  // range the dataset does not have.
  Status KeepPartitions(uint32_t first, uint32_t end);
  // Corruption unless the rows of the source's nodes lie within graph.neighbors' window (a shard's;
  // a whole file's window is all of it).
  Status CheckWindows() const;
  // Builds block_partition_ from boundaries_.
  void IndexBoundaries();
  // The offsets entry of `node` (in [begin_node(), end_node()]).
  int64_t Offset(int64_t node) const { return offsets_[static_cast<size_t>(node - begin_node())]; }
  const format::Dataset* dataset_ = nullptr;
  const format::ChecksummedFileReader* readers_[2] = {nullptr, nullptr};
  ReadFile files_[2];
  uint64_t window_[2] = {0, 0};  // each file's window_offset (0 but on a shard)
  std::vector<int64_t> boundaries_;
  // partition_of's index: the partition of node begin_node() + (i << block_shift_), for each i
  // (a binary search over the boundaries per sampled neighbour was 4% of the sampler's time).
  std::vector<uint32_t> block_partition_;
  int block_shift_ = 0;
  std::vector<int64_t> offsets_;  // entries begin_node() .. end_node()
  uint64_t neighbor_bytes_ = 4;
  uint32_t read_alignment_ = 4096;
  bool adjacency_only_ = false;
};

}  // namespace skiff::storage
