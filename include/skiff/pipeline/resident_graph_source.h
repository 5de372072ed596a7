// ResidentGraphSource: the training core's GraphSource, served from one batch's buffer state.
//
// The neighbour sampler (sampler/neighbor_sampler.h) asks a GraphSource for degrees and for the
// neighbours at chosen positions of a row. This implementation answers from the pinned partitions
// of the batch's ResidentSet and, in exact mode, from fine-grained reads through the buffer pool
// for nodes outside them (BufferedGraph), so the sampler code is the same in memory and out of
// core, and in exact mode draws the same picks.
//   exact      Degree(v) is v's full degree (the CSR offsets are in memory); neighbours of a
//              non-resident node are read fine-grained (the bytes of the row's span only).
//   in-buffer  Degree(v) and the rows are v's neighbours inside the resident partitions only
//              (filtered lists, computed once per node and cached for the batch).
// Batched fine-grained reads (exact mode): the sampler builds a batch hop by hop (announced with
// BeginHop), asking at hop h for the rows of every node of hops 0 .. h, and hop h+1's nodes are
// exactly the new neighbours it was handed during hop h. So the source tracks the hop of every
// node it has returned; the first time the sampler asks for a non-resident node of hop h, the rows
// of *all* non-resident nodes of hop h it knows of are read in one BufferPool::ReadRanges
// (aligned, coalesced, at full queue depth) instead of one synchronous read per node, and kept for
// the rest of the batch (later hops ask for them again). Only hops below `expanded_hops` are
// fetched this way (the outermost hop's nodes are never expanded), only non-resident nodes are
// tracked, and nothing is when every partition is resident. The data is the same; only the
// read schedule changes. PrepareNodes(nodes) does the same for an explicit list.
//
// A group of batches sampled together (NeighborSampler::SampleGroup, hop by hop) shares one
// object: its hop-batched reads then fetch the lists of the whole group's hop at once, in file
// order. It keeps every list it read (one allocation per batched read) until it is destroyed, with
// 32-bit ids when the graph has at most INT32_MAX nodes (half the memory: a group's lists are most
// of what it holds while it is sampled, and the memory plan counts them so, SampledBatchBytes).
//
// Lists read ahead (exact mode, ListsReadAhead): a group's last expanded hop reads the lists of
// most of the graph's nodes (block 0's destinations: ~100k nodes for a group of 15 batches at the
// default fanouts), so its coalesced read covers most of the adjacency file; the lists of the next
// group's seeds lie in the same stretches. Given the next group's seeds, that read takes their
// lists too and leaves them in a ListsReadAhead, and the next group's source starts from them
// instead of reading its seeds' lists again (~100 MB per group at 25% of the 2M-node benchmark).
//
// Thread safety: NOT shared between threads -- one object per batch or group, used by the one
// sampler thread sampling it (it caches rows). Create it per batch or group; it is cheap.
// ListsReadAhead is shared by the groups of a pass, and locks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "skiff/mutex.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/sampler/graph_source.h"

namespace skiff::pipeline {

// Neighbour lists read by one group for the seeds of the next: Put replaces what it holds,
// AppendTo copies one list out. Holds the lists of at most one group's seeds as one CSR (the memory
// plan counts them: MemoryPlan::lists_ahead_seeds).
class ListsReadAhead {
 public:
  // Bytes per list held besides its ids (the node and its offset); ids take 4 B each, 8 B when the
  // graph has more than INT32_MAX nodes.
  static constexpr uint64_t kBytesPerList = 16;
  // Replaces what is held by the lists of `nodes` (sorted, distinct): node i's is
  // ids[indptr[i] .. indptr[i + 1]) of ids32, or of ids64 when ids32 is empty.
  void Put(std::vector<int64_t> nodes, std::vector<int64_t> indptr, std::vector<int32_t> ids32,
           std::vector<int64_t> ids64);
  // Appends v's list to *ids; false when v's list was not read ahead.
  bool AppendTo(int64_t v, std::vector<int64_t>* ids) const;
  void Clear();
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::vector<int64_t> nodes_ SKIFF_GUARDED_BY(mu_);
  std::vector<int64_t> indptr_ SKIFF_GUARDED_BY(mu_);
  std::vector<int32_t> ids32_ SKIFF_GUARDED_BY(mu_);  // or ids64_
  std::vector<int64_t> ids64_ SKIFF_GUARDED_BY(mu_);
};

class ResidentGraphSource final : public sampler::GraphSource {
 public:
  // `graph` and `resident` must outlive this object. `seeds` and `expanded_hops` (the number of
  // layers) enable hop-batched reads; without them every non-resident row is read on demand.
  ResidentGraphSource(const BufferedGraph& graph, const ResidentSet& resident)
      : graph_(graph), resident_(resident), compact_ids_(graph.num_nodes() <= INT32_MAX) {}
  ResidentGraphSource(const BufferedGraph& graph, const ResidentSet& resident,
                      std::span<const int64_t> seeds, int expanded_hops);
  // The same, starting from the lists `ahead` holds for `seeds` (then emptying it), and reading
  // the lists of the non-resident `next_seeds` with its last expanded hop into `ahead` (which must
  // outlive this object).
  ResidentGraphSource(const BufferedGraph& graph, const ResidentSet& resident,
                      std::span<const int64_t> seeds, int expanded_hops, ListsReadAhead* ahead,
                      std::span<const int64_t> next_seeds);

  int64_t num_nodes() const override { return graph_.num_nodes(); }
  int64_t Degree(int64_t v) const override;
  void Prefetch(int64_t v, bool row) const override;
  Status NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override;
  Status Neighbors(int64_t v, std::vector<int64_t>* out) const override;
  void BeginHop(int hop) const override { hop_ = hop; }

  // Fetches (in one batch) and caches the rows of `nodes` that are not resident (exact mode), or
  // the filtered rows of all of them (in-buffer mode). OK or the read's error.
  Status PrepareNodes(std::span<const int64_t> nodes) const;

 private:
  // A cached row: 32-bit or 64-bit ids (valid while this object lives).
  struct Row {
    const int32_t* ids32 = nullptr;
    const int64_t* ids64 = nullptr;
    size_t size = 0;
    int64_t operator[](size_t i) const { return ids32 != nullptr ? ids32[i] : ids64[i]; }
  };
  // The cached row of v, if any.
  std::optional<Row> Cached(int64_t v) const;
  // Loads v's row (full or filtered per mode) into the cache.
  Result<Row> Load(int64_t v) const;
  // Reads the rows of `nodes` in one batch into a new chunk of the cache.
  Status Fetch(std::span<const int64_t> nodes) const;

  // Records the non-resident nodes of `row` (neighbours handed out during the hop being built) not
  // seen before as nodes of the next hop.
  void Track(std::span<const int64_t> row) const;
  // Exact mode: when v is a non-resident node of a tracked hop, reads every non-resident node of
  // that hop not read yet (the last expanded hop: with the next seeds' lists, for ahead_).
  Status FetchHopOf(int64_t v) const;
  // Caches the lists of `nodes` as one chunk: node i's is ids[indptr[i] .. indptr[i + 1]).
  void AddChunk(std::span<const int64_t> nodes, std::span<const int64_t> indptr,
                std::vector<int64_t> ids) const;
  // Points the cache at chunk `chunk` for `nodes` (node i's list at indptr[i] .. indptr[i + 1]).
  void IndexChunk(uint32_t chunk, std::span<const int64_t> nodes,
                  std::span<const int64_t> indptr) const;
  // Hands the lists of next_seeds_ (read with the last hop) to ahead_.
  void PutAhead() const;

  const BufferedGraph& graph_;
  const ResidentSet& resident_;
  const int expanded_hops_ = 0;
  // Cached rows: node -> where its row lies in the chunks (one chunk per batched read), so that a
  // group's thousands of rows cost one allocation per read, not one per row.
  struct CachedRow {
    uint32_t chunk;
    uint64_t offset, length;
  };
  mutable std::unordered_map<int64_t, CachedRow> cache_;
  const bool compact_ids_;  // chunks32_ (the graph has at most INT32_MAX nodes), else chunks64_
  mutable std::vector<std::vector<int32_t>> chunks32_;
  mutable std::vector<std::vector<int64_t>> chunks64_;
  mutable int hop_ = 0;                              // hop being built (BeginHop)
  mutable std::unordered_map<int64_t, int> hop_of_;  // non-resident node -> hop of first appearance
  mutable std::vector<std::vector<int64_t>> pending_by_hop_;  // non-resident, not yet read
  ListsReadAhead* const ahead_ = nullptr;
  mutable std::vector<int64_t> next_seeds_;  // non-resident, distinct; emptied once read
};

}  // namespace skiff::pipeline
