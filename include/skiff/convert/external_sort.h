// EdgeSorter: sorts an unsorted stream of (src, dst) edges by (src, dst) within a memory budget.
//
// Edges are collected in one run buffer of memory_bytes / 16 edges. When it fills, the run is
// sorted (and de-duplicated, if asked) and spilled to a file in a private subdirectory of
// `spill_parent_dir`; Finish() sorts the last run and, if anything was spilled, prepares a k-way
// merge of the spilled runs and the last one. The last run stays in memory when the spilled runs'
// read buffers (at least kMinMergeBufferEdges each) fit in the rest of the budget and there are at
// most kMaxFanIn of them; otherwise it is spilled too (with intermediate merge passes if there are
// more than kMaxFanIn runs).
// When every edge fits in the budget nothing touches the disk. Read() then streams the edges in
// order, duplicates (and self-loops) removed if asked. The spill directory (a SpillDir) is removed
// by the destructor, whatever happened, and by an interrupted run.
//
// A run is sorted in place by several threads (skiff/parallel_sort.h); nothing is allocated for it.
//
// Memory: the run buffer (at most memory_bytes, touched only as far as it is filled) plus, when
// merging, one read buffer per spilled run sharing what the last run leaves of the same budget.
// Errors: IOError / ResourceExhausted (disk full) name the spill file.
//
// Thread safety: a sorter is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "skiff/convert/spill_file.h"
#include "skiff/status.h"

namespace skiff::convert {

struct Edge {
  int64_t src = 0;
  int64_t dst = 0;
  friend bool operator==(const Edge& a, const Edge& b) { return a.src == b.src && a.dst == b.dst; }
  friend bool operator<(const Edge& a, const Edge& b) {
    return a.src < b.src || (a.src == b.src && a.dst < b.dst);
  }
};
static_assert(sizeof(Edge) == 16, "spill files store Edge as two little-endian int64");

struct EdgeSorterOptions {
  uint64_t memory_bytes = 256ull << 20;  // run buffer / merge buffers
  std::string spill_parent_dir;          // where the private spill directory is created
  bool add_reverse = false;              // undirected input: Add(u, v) also adds (v, u)
  bool drop_self_loops = true;
  bool drop_duplicates = true;
  int threads = 0;  // threads sorting a run (0: the hardware's, at most 8); the order is the same
};

struct EdgeSorterStats {
  uint64_t edges_added = 0;         // edges accepted by Add (reverse edges included)
  uint64_t self_loops_dropped = 0;  // (counted once per Add call)
  uint64_t duplicates_dropped = 0;
  uint64_t runs_spilled = 0;
  uint64_t bytes_spilled = 0;  // including intermediate merge passes
  uint64_t merge_passes = 0;   // intermediate passes (0 when the runs fit one merge)
};

class EdgeSorter {
 public:
  static constexpr size_t kMaxFanIn = 128;
  static constexpr size_t kMinRunEdges = 1024;
  // The last run stays in memory when each spilled run still gets this many edges of read buffer.
  static constexpr size_t kMinMergeBufferEdges = 4096;

  static Result<std::unique_ptr<EdgeSorter>> Create(const EdgeSorterOptions& options);
  ~EdgeSorter();  // removes the spill directory
  EdgeSorter(const EdgeSorter&) = delete;
  EdgeSorter& operator=(const EdgeSorter&) = delete;

  // Adds one edge (and its reverse if add_reverse). May sort and spill a full run.
  Status Add(int64_t src, int64_t dst) {
    if (src == dst && options_.drop_self_loops) {
      ++stats_.self_loops_dropped;
      return Status::Ok();
    }
    if (run_.size() + 2 > run_capacity_) SKIFF_RETURN_IF_ERROR(SpillRun());
    run_.push_back(Edge{src, dst});
    ++stats_.edges_added;
    if (options_.add_reverse && src != dst) {
      run_.push_back(Edge{dst, src});
      ++stats_.edges_added;
    }
    return Status::Ok();
  }

  // Ends the input and prepares to Read().
  Status Finish();
  // Copies up to `capacity` next edges in (src, dst) order into `out`; returns how many (0 at the
  // end).
  Result<size_t> Read(Edge* out, size_t capacity);

  const EdgeSorterStats& stats() const { return stats_; }
  size_t run_capacity_edges() const { return run_capacity_; }

 private:
  class RunReader;
  class Merger;
  explicit EdgeSorter(const EdgeSorterOptions& options);
  void SortRun();
  Status SpillRun();        // sorts the run, then SpillSortedRun()
  Status SpillSortedRun();  // writes the run to a new file and empties it
  Result<std::string> WriteRunFile(const Edge* edges, size_t count);
  Status MergeToFile(const std::vector<std::string>& inputs, std::string* output);

  const EdgeSorterOptions options_;
  int sort_threads_ = 1;
  size_t run_capacity_ = 0;
  std::vector<Edge> run_;
  SpillDir spill_dir_;  // created at the first spill
  std::vector<std::string> run_files_;
  uint64_t next_file_id_ = 0;
  bool finished_ = false;
  size_t read_pos_ = 0;  // in-memory case
  bool have_last_ = false;
  Edge last_;  // last edge returned by Read (for de-duplication across runs)
  std::unique_ptr<Merger> merger_;
  EdgeSorterStats stats_;
};

}  // namespace skiff::convert
