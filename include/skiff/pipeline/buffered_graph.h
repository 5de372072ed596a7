// BufferedGraph: the graph and its features as seen through the partition buffer pool, for one
// buffer state at a time.
//
// A ResidentSet holds pins on the partitions of one buffer state (EpochPlan); it is shared by every
// batch of that state and unpins each partition when the last batch holding it is done. Given a
// ResidentSet, BufferedGraph answers the two questions sampling and gathering ask:
//   Neighbors(nodes)  -- the adjacency lists of `nodes`, as a CSR of global ids;
//   Features(nodes)   -- their feature rows, as float32.
// Resident nodes are served from the pinned partitions' memory. What happens to a node outside the
// resident partitions depends on the sampling mode:
//   kExact     its adjacency list / feature row is read with fine-grained, batched reads through
//   the
//              pool (BufferPool::ReadRanges), so every answer is exactly what the in-memory graph
//              holds and a sampler seeded alike draws the same batches, whatever the budget;
//   kInBuffer  neighbour lists are filtered to resident partitions (MariusGNN's behaviour), so a
//              batch never leaves the buffer and never issues a fine-grained read; asking for a
//              non-resident node is a programmer error.
// Every byte handed out has passed the dataset's checksums (the pool verifies what it reads).
//
// Counters: bytes_used (bytes of adjacency lists and feature rows the callers asked for, the
// denominator of read amplification), fine-grained requests and the rows / lists they served, and
// the non-resident rows a HotRowCache served instead.
//
// Thread safety: Neighbors and Features may be called from many threads at once (sampler and
// gather threads); the pool serialises its fine-grained reads. ResidentSet is immutable once built.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/pipeline/hot_row_cache.h"
#include "skiff/status.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/dataset_partition_source.h"

namespace skiff::pipeline {

enum class SamplingMode { kExact, kInBuffer };
const char* SamplingModeName(SamplingMode mode);
Result<SamplingMode> ParseSamplingMode(const std::string& name);  // "exact" | "in-buffer"

class ResidentSet {
 public:
  // `pins[p]` is the pin of partition p, or null when p is not resident (size k).
  explicit ResidentSet(std::vector<std::shared_ptr<const storage::PartitionPin>> pins);
  bool contains(uint32_t partition) const {
    return partition < pins_.size() && pins_[partition] != nullptr;
  }
  const storage::PartitionPin& pin(uint32_t partition) const { return *pins_[partition]; }
  size_t num_resident() const { return num_resident_; }

 private:
  std::vector<std::shared_ptr<const storage::PartitionPin>> pins_;
  size_t num_resident_ = 0;
};

struct GraphAccessCounters {
  uint64_t bytes_used = 0;            // adjacency + feature bytes callers asked for
  uint64_t fine_requests = 0;         // ReadRanges calls
  uint64_t fine_rows = 0;             // feature rows read fine-grained
  uint64_t cached_rows = 0;           // non-resident feature rows served by the hot row cache
  uint64_t fine_adjacency = 0;        // adjacency lists read fine-grained
  uint64_t fine_row_bytes = 0;        // bytes read for fine_rows (aligned, after coalescing)
  uint64_t fine_adjacency_bytes = 0;  // bytes read for fine_adjacency
  uint64_t resident_rows = 0;         // feature rows served from pinned partitions
  uint64_t resident_adjacency = 0;    // adjacency lists served from pinned partitions
};

class BufferedGraph {
 public:
  // Largest adjacency bytes read in one fine-grained round (a longer list is read alone).
  static constexpr uint64_t kAdjacencyRoundBytes = 8ull << 20;
  // Most float32 feature rows read fine-grained in one round (their request list: 32 B a row).
  static constexpr size_t kFeatureRowsPerRound = 131072;

  // `source` and `pool` must outlive this object.
  BufferedGraph(const storage::DatasetPartitionSource* source, storage::BufferPool* pool,
                SamplingMode mode);

  // With row normalisation on, Features() scales every row with sampler::NormalizeRowsToSumOne,
  // as InMemoryFeatures::NormalizeRows does in memory (`--feature-norm row`).
  // Set before use; not thread-safe against concurrent Features() calls.
  void set_normalize_rows(bool on) { normalize_rows_ = on; }
  // Rows of non-resident nodes found in `cache` are copied from it instead of read fine-grained
  // (exact mode). The cache must outlive this object; set before use.
  void set_row_cache(const HotRowCache* cache) { row_cache_ = cache; }

  SamplingMode mode() const { return mode_; }
  const storage::DatasetPartitionSource& source() const { return *source_; }
  storage::BufferPool& pool() const { return *pool_; }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t feature_dim() const { return feature_dim_; }

  // Writes the neighbour lists of `nodes` as CSR: (*indptr)[i]..(*indptr)[i+1] indexes
  // *neighbors (global ids, ascending as stored). OK, or the fine-grained read's error (I/O,
  // checksum), naming file and offset.
  Status Neighbors(const ResidentSet& resident, std::span<const int64_t> nodes,
                   std::vector<int64_t>* indptr, std::vector<int64_t>* neighbors) const;
  // The same with 32-bit ids (half the memory), for graphs of at most INT32_MAX nodes.
  Status Neighbors(const ResidentSet& resident, std::span<const int64_t> nodes,
                   std::vector<int64_t>* indptr, std::vector<int32_t>* neighbors) const;
  // Writes the feature rows of `nodes` (nodes.size() x feature_dim, row-major float32) to `dst`.
  Status Features(const ResidentSet& resident, std::span<const int64_t> nodes, float* dst) const;
  // The same, row i to dst[i] (feature_dim floats each; dst.size() == nodes.size()): rows bound
  // for several places are read in one fine-grained request.
  Status FeaturesTo(const ResidentSet& resident, std::span<const int64_t> nodes,
                    std::span<float* const> dst) const;

  // Hands the feature rows of `nodes` (ascending, distinct) to consume(i, row) one at a time, in
  // that order: the same float32 rows Features() writes, but non-resident rows are streamed
  // through the pool (BufferPool::StreamRanges) instead of staged, so a group's whole union of
  // rows is one continuous read in file order. `row` is valid during the call only. OK, or the
  // first read or consume error.
  using RowFn = std::function<Status(size_t i, const float* row)>;
  Status StreamFeatures(const ResidentSet& resident, std::span<const int64_t> nodes,
                        const RowFn& consume) const;

  GraphAccessCounters counters() const;

 private:
  // Neighbors, with ids of type Id (int64_t or int32_t).
  template <typename Id>
  Status NeighborsAs(const ResidentSet& resident, std::span<const int64_t> nodes,
                     std::vector<int64_t>* indptr, std::vector<Id>* neighbors) const;
  // NeighborsAs's steps: the lists of resident nodes (exact mode: into their places, sized by
  // *indptr; in-buffer: appended, filtered, setting *indptr), returning the indices into `nodes`
  // of the others; then those lists (exact mode only), read fine-grained in rounds of at most
  // kAdjacencyRoundBytes, in the order of `fine`, into their places.
  template <typename Id>
  std::vector<size_t> CopyResidentLists(const ResidentSet& resident, std::span<const int64_t> nodes,
                                        std::vector<int64_t>* indptr,
                                        std::vector<Id>* neighbors) const;
  template <typename Id>
  Status ReadFineLists(std::span<const int64_t> nodes, std::span<const size_t> fine,
                       const std::vector<int64_t>& indptr, std::vector<Id>* neighbors) const;
  void CopyRow(const std::byte* row, float* dst) const;
  // Where `node`'s row is in memory: a pinned partition of `resident`, or the hot row cache
  // (`cached`); null bytes when it has to be read. Checks that in-buffer sampling never asks for a
  // node outside the resident partitions.
  struct MemoryRow {
    const std::byte* bytes = nullptr;
    bool cached = false;
  };
  MemoryRow FindInMemory(const ResidentSet& resident, int64_t node) const;
  // Where Features and FeaturesTo write row i: base + i * dim, or rows[i].
  struct RowTargets {
    float* base = nullptr;
    std::span<float* const> rows;
    int64_t dim = 0;
    float* at(size_t i) const {
      return rows.empty() ? base + static_cast<int64_t>(i) * dim : rows[i];
    }
  };
  Status FeaturesAt(const ResidentSet& resident, std::span<const int64_t> nodes,
                    const RowTargets& dst) const;
  // Reads the rows nodes[fine[j]] fine-grained into their targets.
  Status FineFeatures(std::span<const int64_t> nodes, std::span<const size_t> fine,
                      const RowTargets& dst) const;

  // Constant after construction.
  const storage::DatasetPartitionSource* const source_;
  storage::BufferPool* const pool_;
  const SamplingMode mode_;
  int64_t num_nodes_ = 0;
  int64_t feature_dim_ = 0;
  uint64_t row_bytes_ = 0;
  bool half_features_ = false;
  bool normalize_rows_ = false;
  const HotRowCache* row_cache_ = nullptr;

  mutable std::atomic<uint64_t> bytes_used_{0};
  mutable std::atomic<uint64_t> fine_requests_{0};
  mutable std::atomic<uint64_t> fine_rows_{0};
  mutable std::atomic<uint64_t> cached_rows_{0};
  mutable std::atomic<uint64_t> fine_adjacency_{0};
  mutable std::atomic<uint64_t> fine_row_bytes_{0};
  mutable std::atomic<uint64_t> fine_adjacency_bytes_{0};
  mutable std::atomic<uint64_t> resident_rows_{0};
  mutable std::atomic<uint64_t> resident_adjacency_{0};
};

}  // namespace skiff::pipeline
