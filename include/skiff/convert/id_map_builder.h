// IdMapBuilder: gives the raw node IDs of an edge stream (strings, sparse or dense integers) dense
// IDs [0, N) in order of first appearance, by sorting rather than by looking each endpoint up, in
// memory bounded by a budget, reading the input once (so pipes and gzip streams work).
//
// The classic external-memory plan (docs/convert.md, "Mapping IDs by sorting"):
//   1. Add(): edges are collected into runs. A run keeps its distinct raw IDs (a hash table over an
//      arena; local IDs 0, 1, ... in order of first appearance within the run) and its edges as
//      pairs of local IDs. When the run reaches its budget it is spilled as three files: its raw
//      IDs in local order (L), the same sorted by bytes with their local IDs (A), its edges (B).
//   2. Finish(): a k-way merge of the A files meets each distinct raw ID once, together with every
//      run that holds it. Its first appearance is (the earliest such run r, its local ID l there),
//      and that fixes its dense ID: the IDs first seen in run r follow every ID first seen in an
//      earlier run, in local order. Each run's file M gets (local ID, r, l) per ID; the file G gets
//      (raw ID, r, l) in byte order; per run, a bitmap marks the local IDs first seen there. The
//      RocksDB map (IdMap's layout) is then bulk-loaded: dense -> raw from the L files (in dense
//      order), raw -> dense from G (in byte order).
//   3. Replay(): per run, its local -> dense table from M, then its edges from B, to the sink.
// When every edge fits in one run, nothing touches the disk and dense ID = local ID.
//
// The IDs are those IdMap::GetOrAssign gives when called for each edge's source, then target, so
// the datasets are the same whichever path built them.
//
// Dense integers (option): if every distinct raw ID parses as a non-negative integer (ParseInt64)
// below max_identity_id and the values cover [0, max] exactly, each ID maps to its value, no map is
// written, and identity() is true: the result ConvertGraph's dense path gives for a file.
//
// Memory: pass 1 holds at most memory_bytes (arena, table, local IDs, edges, sort scratch); the
// merge, per run, a read buffer of its A file and a write buffer of its M file sharing the same
// budget, plus 1 bit per local ID; Replay, one run's local -> dense table (8 bytes per local ID)
// and, when nothing spilled, the run's edges (8 bytes each): replay_bytes().
// Errors: IOError / ResourceExhausted (disk full) name the spill or map file; ResourceExhausted
// when the input needs more than kMaxRuns runs at this budget (raise --memory).
//
// Thread safety: a builder is used by one thread. It runs one thread of its own, which interns
// the edges Add hands over, from construction to Finish (or destruction).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/status.h"

namespace skiff::convert {

class IdMapBulkLoad;
class SpillDir;

struct IdMapBuilderOptions {
  uint64_t memory_bytes = 256ull << 20;
  std::string spill_parent_dir;  // "" = the system's temporary directory
  bool detect_dense_integers = false;
  int64_t max_identity_id = int64_t{1} << 36;  // dense detection: values must be below this
};

struct IdMapBuilderStats {
  uint64_t edges = 0;
  uint64_t runs_spilled = 0;
  uint64_t bytes_spilled = 0;   // L, A, B, M and G files
  uint64_t id_occurrences = 0;  // sum over runs of the run's distinct IDs
};

class IdMapBuilder {
 public:
  static constexpr size_t kMaxRuns = 4096;
  static constexpr size_t kBatchEdges = 4096;   // edges handed to the interning thread at once
  static constexpr size_t kQueueBatches = 2;    // full batches waiting for it, at most
  static constexpr size_t kPrefetchEdges = 16;  // edges whose probes are prefetched together

  static Result<std::unique_ptr<IdMapBuilder>> Create(const IdMapBuilderOptions& options);
  ~IdMapBuilder();  // removes the spill files
  IdMapBuilder(const IdMapBuilder&) = delete;
  IdMapBuilder& operator=(const IdMapBuilder&) = delete;

  // Adds one edge by its raw endpoint IDs (any bytes, compared byte for byte), copied. Edges are
  // interned on the builder's thread in batches of kBatchEdges, so an error (of spilling a run)
  // surfaces a few thousand calls late, or from Finish.
  Status Add(std::string_view src, std::string_view dst);

  // Ends the input. Merges the runs and, unless the IDs are dense integers, writes the RocksDB
  // map into `map_dir` (which must not exist).
  Status Finish(const std::string& map_dir);
  bool identity() const { return identity_; }
  int64_t num_nodes() const { return num_nodes_; }
  // Bytes Replay holds (see Memory above).
  uint64_t replay_bytes() const;

  // Calls sink(src, dst) with dense IDs for every edge, run by run (input order within a run),
  // then releases the builder's memory and files.
  Status Replay(const std::function<Status(int64_t, int64_t)>& sink);

  const IdMapBuilderStats& stats() const { return stats_; }

 private:
  class Run;
  class Merge;
  explicit IdMapBuilder(const IdMapBuilderOptions& options);
  struct Batch;
  class Interner;
  Status InternBatch(const Batch& batch);
  Status SpillRun();
  Status FinishInMemory(const std::string& map_dir);
  Status FinishSpilled(const std::string& map_dir);
  Status MergeRuns();
  Status LoadMap(const std::string& map_dir);
  Status ReplaySpilled(const std::function<Status(int64_t, int64_t)>& sink);
  int64_t DenseOf(uint32_t run, uint32_t local) const;

  const IdMapBuilderOptions options_;
  std::unique_ptr<Run> run_;
  std::unique_ptr<Batch> pending_;  // being filled by Add
  struct SpilledRun;
  std::vector<SpilledRun> spilled_;
  std::unique_ptr<SpillDir> spill_dir_;
  std::string merged_path_;               // G
  std::vector<int64_t> in_memory_dense_;  // nothing spilled, dense integers: local -> value
  bool finished_ = false;
  bool identity_ = false;
  int64_t num_nodes_ = 0;
  IdMapBuilderStats stats_;
  std::unique_ptr<Interner> interner_;  // last: destroyed (joined) first
};

}  // namespace skiff::convert
