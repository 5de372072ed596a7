// IdMap: the persistent mapping between raw node IDs (arbitrary byte strings: "alice", "007",
// "18446744073709551615") and dense node IDs [0, N), assigned in first-seen order. Stored in
// RocksDB under the dataset's idmap/ directory (format::kIdMapDir), so the map need not fit in
// memory:
//   key 'r' + raw bytes          -> value: dense ID, int64 little-endian (8 bytes)
//   key 'd' + dense ID, int64 big-endian (so keys sort by ID) -> value: raw bytes
// A raw ID is compared byte for byte: "7" and "07" are different IDs.
//
// Two ways to build one. `skiff convert` builds it in bulk (IdMapBuilder sorts the IDs, then
// IdMapBulkLoad below writes sorted files): one lookup per endpoint does not scale once the IDs
// outgrow memory. IdMap::Create/GetOrAssign build it one ID at a time: the definition of the IDs
// the bulk path must give (its tests compare the two), and a simple writer for small maps.
//
// Writes are collected in a WriteBatch (without the write-ahead log: a map that is being built
// belongs to a dataset that is not committed yet, so a crash loses nothing valid) and applied every
// kBatchEntries new IDs and in Close(). A bounded in-memory cache (raw -> dense) serves repeated
// IDs without touching RocksDB; when it is full it is cleared (after the pending batch is written),
// which keeps the memory bound simple and exact. Until the first clear the cache holds every ID
// assigned, so a miss is known to be a new ID without a RocksDB lookup. RocksDB's block cache and
// memtables are sized from the same budget. rocksdb::Status becomes skiff::Status in one place
// (id_map.cpp, ToStatus).
//
// Thread safety: an IdMap is used by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "skiff/status.h"

namespace skiff::convert {

class IdMap {
 public:
  static constexpr size_t kBatchEntries = 64 * 1024;

  // Creates an empty map in directory `dir` (which must not hold a database). `memory_bytes` bounds
  // the cache plus RocksDB's block cache and memtables (at least a few MiB are used regardless).
  static Result<std::unique_ptr<IdMap>> Create(const std::string& dir, uint64_t memory_bytes);
  // Opens an existing map read-only (for exporting results by raw ID).
  static Result<std::unique_ptr<IdMap>> OpenReadOnly(const std::string& dir);
  ~IdMap();  // closes the database; pending writes are lost unless Close() was called
  IdMap(const IdMap&) = delete;
  IdMap& operator=(const IdMap&) = delete;

  // Returns the dense ID of `raw`, assigning the next one (size()) if it is new. IOError /
  // Corruption from RocksDB name the map directory.
  Result<int64_t> GetOrAssign(std::string_view raw);
  // Dense ID of `raw`, or nullopt if it was never assigned.
  Result<std::optional<int64_t>> Find(std::string_view raw);
  // Raw ID of dense ID `dense`; NotFound if dense is not in [0, size()).
  Result<std::string> RawId(int64_t dense);

  // Visits every entry of a map opened read-only, in key order: ForEachDense calls fn(dense, raw)
  // for dense IDs 0, 1, 2, ...; ForEachRaw calls fn(raw, dense) for raw IDs in increasing byte
  // order (memcmp), the orders IdMapBulkLoad takes. The views are valid during the call only.
  // Stops at, and returns, the first error of fn; Corruption for a malformed entry, IOError /
  // Corruption from RocksDB naming the map directory.
  Status ForEachDense(const std::function<Status(int64_t dense, std::string_view raw)>& fn);
  Status ForEachRaw(const std::function<Status(std::string_view raw, int64_t dense)>& fn);

  // Number of IDs assigned so far.
  int64_t size() const { return next_id_; }
  // Lookups answered by the cache / by RocksDB (for the summary and tests).
  uint64_t cache_hits() const { return cache_hits_; }
  uint64_t db_lookups() const { return db_lookups_; }

  // Writes pending assignments, flushes memtables to disk and closes the database.
  Status Close();

 private:
  class Impl;
  explicit IdMap(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int64_t next_id_ = 0;
  uint64_t cache_hits_ = 0;
  uint64_t db_lookups_ = 0;
};

// IdMapBulkLoad: writes a new map (the layout above) from two sorted streams, without a write
// path: the entries go into two SST files (rocksdb::SstFileWriter), which Finish() ingests into a
// new database in `dir` (IngestExternalFile). AddDense must be called for dense IDs 0, 1, 2, ... in
// that order; AddRaw for raw IDs in strictly increasing byte order (memcmp); the two may
// interleave. Memory: a few data blocks per file. The SST files are written in `scratch_dir` and
// moved into the map (copied when it is on another file system); an error leaves no database.
//
// Thread safety: used by one thread.
class IdMapBulkLoad {
 public:
  static Result<std::unique_ptr<IdMapBulkLoad>> Create(const std::string& dir,
                                                       const std::string& scratch_dir);
  ~IdMapBulkLoad();  // abandons an unfinished load (its SST files are removed)
  IdMapBulkLoad(const IdMapBulkLoad&) = delete;
  IdMapBulkLoad& operator=(const IdMapBulkLoad&) = delete;

  // Records raw ID `raw` as dense ID dense_count() (then incremented).
  Status AddDense(std::string_view raw);
  // Records raw -> dense; raw must be greater (memcmp) than the previous AddRaw's.
  Status AddRaw(std::string_view raw, int64_t dense);
  // Ingests both files into the new database in `dir` and closes it. InvalidArgument if the
  // numbers of AddDense and AddRaw calls differ.
  Status Finish();

  int64_t dense_count() const { return dense_count_; }

 private:
  class Impl;
  explicit IdMapBulkLoad(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int64_t dense_count_ = 0;
  int64_t raw_count_ = 0;
};

}  // namespace skiff::convert
