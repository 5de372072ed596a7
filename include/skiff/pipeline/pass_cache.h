// PassCache: the batches of a pass that repeats unchanged, kept in a scratch file the first time it
// runs and replayed from that file afterwards.
//
// Why: an evaluation pass draws the same batches every epoch (epoch 0's random stream, the same
// nodes and batch size), and with aggregated input (input_aggregator.h) what a batch carries into
// the model -- its sampled structure, and its first layer's input summed from the feature rows --
// depends on the dataset alone, not on the model. Out of core, producing it costs several passes
// over the feature file per evaluation pass (2M nodes at 25%: 4 of them, 4-5 GiB read, for 50
// batches), while the batches themselves are ~6 MB each (300 MB for that pass). So the first
// evaluation writes each batch as it reaches the compute stage, and the later ones read the file
// once, front to back, instead of sampling and gathering again. The model computes on the same
// bytes either way: a replayed pass's results are bit-identical to recomputing it.
//
// The file: unnamed (O_TMPFILE) in a directory the caller names, so nothing is left behind however
// the process ends; written and read with O_DIRECT (the page cache holds none of it, as with the
// dataset's files). A record is a 4 KiB header block (batch index, array sizes, checksum) and the
// arrays, padded to 4 KiB; the checksum folds the XXH3-64 of each 1 MiB chunk of the arrays and is
// checked when the record is read back (Corruption naming the batch).
//
// Memory: records pass through a 1 MiB chunk buffer (kChunkBytes, within the documented fixed
// overhead's allocator slack) both ways, alive only while a pass is written or replayed (so one
// at a time whatever the number of caches); Replay also holds as many batches as it is given (at
// most three: the one being read, one queued, the one computing; ReplayBatchesWithin).
//
// Thread safety: one thread uses a cache at a time; Replay reads ahead on a thread of its own and
// calls `consume` on the caller's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "skiff/pipeline/epoch_runner.h"
#include "skiff/status.h"
#include "skiff/storage/aligned_buffer.h"

namespace skiff::pipeline {

class PassCache {
 public:
  // An unnamed file in `dir`, opened O_DIRECT. Unavailable when the directory's file system has
  // no O_TMPFILE or no O_DIRECT (tmpfs: it would hold the batches in memory) -- an error naming
  // the directory; callers then run without a cache.
  // `free_reserve_bytes`: what Append leaves free on the file system.
  static Result<std::unique_ptr<PassCache>> Create(const std::string& dir,
                                                   uint64_t free_reserve_bytes = uint64_t{1} << 30);
  ~PassCache();
  PassCache(const PassCache&) = delete;
  PassCache& operator=(const PassCache&) = delete;

  // Recording: Begin drops what was kept and starts a pass identified by `key`; Append writes its
  // batches in pass order (IOError, or ResourceExhausted when the record would leave less than
  // the reserve free on the file system: the cache is then empty, and the caller goes on without
  // it); Seal marks the pass complete.
  void Begin(uint64_t key);
  Status Append(const PreparedBatch& batch);
  void Seal();
  // A sealed pass with this key is kept.
  bool Holds(uint64_t key) const { return sealed_ && key_ == key; }

  int64_t batches() const { return static_cast<int64_t>(records_.size()); }
  uint64_t file_bytes() const { return end_; }
  // How many batches a Replay may hold at once within `allowance` bytes (with its chunk buffer):
  // at most kMaxReplayBatches, 0 when not even one of the largest kept batch fits.
  int ReplayBatchesWithin(uint64_t allowance) const;
  static constexpr int kMaxReplayBatches = 3;  // the one being read, one queued, the one computing

  static constexpr uint64_t kChunkBytes = uint64_t{1} << 20;

  // Reads the kept batches in order and calls `consume` on each; a thread reads ahead while at
  // most `batches` (>= 1) are alive at once. Returns consume's first error, an IOError, or
  // Corruption naming the batch whose checksum or sizes do not match.
  Status Replay(const std::function<Status(PreparedBatch&)>& consume,
                int batches = kMaxReplayBatches);

 private:
  struct Record {
    uint64_t offset = 0;
    uint64_t bytes = 0;        // header block and padded arrays
    uint64_t batch_bytes = 0;  // what the batch holds once read back
    int64_t index = 0;
  };
  PassCache(int fd, std::string dir, uint64_t free_reserve_bytes)
      : fd_(fd),
        dir_(std::move(dir)),
        name_("the scratch file in " + dir_),
        free_reserve_bytes_(free_reserve_bytes) {}
  Status Read(const Record& record, storage::AlignedBuffer* chunk, PreparedBatch* out) const;

  int fd_ = -1;
  std::string dir_;
  std::string name_;  // what errors call the file (it has no name)
  uint64_t key_ = 0;
  bool sealed_ = false;
  std::vector<Record> records_;
  uint64_t end_ = 0;              // bytes written
  storage::AlignedBuffer chunk_;  // Append's, from the first Append to Seal (Replay has its own)
  uint64_t free_reserve_bytes_;
};

}  // namespace skiff::pipeline
