// BufferPool: keeps partitions of a dataset resident within a fixed memory budget.
//
// At creation the pool computes how many partition slots fit in the budget (a slot holds the
// largest partition's aligned extents) after reserving the scratch space for fine-grained reads,
// allocates them once (page-aligned, registered with io_uring), and refuses -- ResourceExhausted,
// naming the minimum budget -- a budget that cannot hold `min_resident_partitions` slots. It never
// allocates slot memory again, so the budget can never be exceeded (checked with SKIFF_CHECK).
// When the budget holds every partition at its own size (PackedBudgetFor), the pool is packed
// instead: slot p is sized to partition p and holds only it, so nothing is ever evicted. Partitions
// of uneven size then cost their sum, not their count times the largest (the 1m preset's
// adjacency-only partitions: 60.7 MiB instead of 94.7 MiB).
//
// Pin(p) returns a PartitionPin, a move-only handle; while any pin of p lives, p is never evicted.
// A background I/O thread loads partitions: those a Pin waits for first, then (with a plan) the
// next planned partitions, as long as a slot is free or holds a partition needed later than the one
// to load. With an epoch plan (SetPlan: the sequence in which partitions will be pinned) eviction
// is Belady's: the unpinned partition whose next use is furthest away (never used again first, ties
// by least recently used). Without a plan: least recently used.
//
// ReadRanges() serves fine-grained reads (single feature rows, adjacency lists of non-resident
// nodes): sorted, expanded to read_alignment(), coalesced (across gaps of at most
// fine_read_merge_gap bytes) and read in one batch through a second engine, verified, and copied
// to the callers' destinations.
//
// Thread safety: Pin, pin destruction, SetPlan, ReadRanges and stats() may be called from any
// thread. Pin blocks while the partition loads, and while every slot is pinned. The pool must
// outlive every pin; destroying it with pins outstanding is a programmer error (checked).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "skiff/mutex.h"
#include "skiff/status.h"
#include "skiff/storage/aligned_buffer.h"
#include "skiff/storage/io_engine.h"
#include "skiff/storage/partition_source.h"

namespace skiff::storage {

struct BufferPoolOptions {
  uint64_t budget_bytes = 0;
  // Partitions the caller pins at the same time (the working set); creation fails unless at least
  // this many slots fit. Two lets one partition be used while the next one loads. 0: a pool that
  // only serves fine-grained reads (ReadRanges, StreamRanges) when the budget leaves no slot; Pin
  // must not be called on a pool without slots.
  uint32_t min_resident_partitions = 2;
  // Reserved out of the budget for ReadRanges (a larger fine-grained batch is read in rounds).
  uint64_t fine_read_scratch_bytes = 4ull << 20;
  // ReadRanges reads two requested blocks as one read when at most this many bytes lie between
  // them (read and checked, then dropped). On an SSD a random 4 KiB read costs about as much as
  // reading tens of KiB in sequence (the benchmark VM: 55k random 4 KiB reads/s at QD 64 = 18 us
  // each, 1.5 GB/s for large reads = 27 KiB in 18 us), so merging across small gaps trades bytes
  // for fewer reads. 0: merge only adjacent or overlapping blocks.
  uint64_t fine_read_merge_gap = 32ull << 10;
  bool prefetch = true;           // load planned partitions ahead of their Pin
  bool verify_checksums = true;   // pass every read through PartitionSource::Verify
  bool record_evictions = false;  // keep eviction_log() (tests, diagnostics)
  IoEngineOptions engine;         // both the loading and the fine-grained engine
};

struct BufferPoolStats {
  uint64_t bytes_read_total = 0;  // bytes handed to the engines (aligned; partition + fine reads)
  uint64_t reads_issued = 0;      // raw reads the engines issued (pieces <= 1 MiB, retries)
  uint64_t hits = 0;              // Pin found the partition resident
  uint64_t misses = 0;            // Pin had to wait for (or start) a load
  uint64_t stall_ns = 0;          // total time Pin calls spent waiting for I/O
  uint64_t partition_loads = 0;
  uint64_t evictions = 0;
  uint64_t fine_reads = 0;       // FineRead requests served
  uint64_t fine_bytes_read = 0;  // bytes read for them (aligned, after coalescing)
};

// One fine-grained read: `length` bytes at `offset` of source file `file` into `dst`.
struct FineRead {
  uint32_t file = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  void* dst = nullptr;
};

class BufferPool;

// A pinned, resident partition. Move-only; unpins on destruction.
class PartitionPin {
 public:
  PartitionPin() = default;
  ~PartitionPin() { Release(); }
  PartitionPin(PartitionPin&& other) noexcept;
  PartitionPin& operator=(PartitionPin&& other) noexcept;
  PartitionPin(const PartitionPin&) = delete;
  PartitionPin& operator=(const PartitionPin&) = delete;

  bool valid() const { return pool_ != nullptr; }
  uint32_t partition() const { return partition_; }
  size_t num_extents() const;
  // The exact bytes of extent i (as returned by PartitionSource::Extents), valid while pinned.
  std::span<const std::byte> extent(size_t i) const;
  void Release();  // unpins now (idempotent)

 private:
  friend class BufferPool;
  PartitionPin(BufferPool* pool, uint32_t slot, uint32_t partition)
      : pool_(pool), slot_(slot), partition_(partition) {}
  BufferPool* pool_ = nullptr;
  uint32_t slot_ = 0;
  uint32_t partition_ = 0;
};

class BufferPool {
 public:
  // `source` must outlive the pool. InvalidArgument for a zero budget or an empty source;
  // ResourceExhausted ("needs at least N bytes") when the working set does not fit; I/O engine
  // setup errors otherwise.
  static Result<std::unique_ptr<BufferPool>> Create(const PartitionSource* source,
                                                    const BufferPoolOptions& options);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // The budget needed to hold `partitions` slots for `source` (plus the fine-read scratch).
  static uint64_t BudgetFor(const PartitionSource& source, uint32_t partitions,
                            const BufferPoolOptions& options);

  // The budget that holds every partition of `source` packed (each at its own size), plus the
  // fine-read scratch: Create packs the pool when given at least this.
  static uint64_t PackedBudgetFor(const PartitionSource& source, const BufferPoolOptions& options);

  // Replaces the plan (sequence of partition ids in pin order) and restarts its cursor. An empty
  // plan means "no plan" (LRU). Pins advance the cursor past their partition's next occurrence.
  void SetPlan(std::vector<uint32_t> plan);

  // Blocks until `partition` is resident, then pins it. Returns the load's Status (I/O error,
  // checksum mismatch naming file and block) when it failed; a later Pin retries the load.
  Result<PartitionPin> Pin(uint32_t partition);
  // True when `partition` is resident now (it may be evicted right after unless pinned).
  bool IsResident(uint32_t partition) const;

  // Fine-grained reads (see class comment). OK, or the first failed read's Status. Adds the bytes
  // read for them (aligned, after coalescing) to *bytes_read when given.
  Status ReadRanges(std::span<const FineRead> reads, uint64_t* bytes_read = nullptr);
  // The same reads (each at most kFineSlotBytes; `dst` unused), handed over instead of copied:
  // consume(i, bytes) is called once per read i, in file order, on the calling thread, with its
  // verified bytes in the pool's scratch (valid during the call only) while later reads are in
  // flight. A stream of any length needs no memory beyond the scratch. OK, or the first read,
  // checksum or consume error (consume is not called after it).
  using StreamFn = std::function<Status(size_t index, const std::byte* bytes)>;
  Status StreamRanges(std::span<const FineRead> reads, const StreamFn& consume,
                      uint64_t* bytes_read = nullptr);

  BufferPoolStats stats() const;
  uint32_t num_slots() const { return static_cast<uint32_t>(slots_.size()); }
  // The largest partition's slot (a packed pool sizes each slot to its partition).
  uint64_t slot_bytes() const { return slot_bytes_; }
  // Every partition in a slot of its own (see the class comment).
  bool packed() const { return packed_; }
  uint64_t allocated_bytes() const { return slot_memory_.size() + fine_scratch_.size(); }
  uint64_t scratch_bytes() const { return fine_scratch_.size(); }
  uint64_t budget_bytes() const { return options_.budget_bytes; }
  // The engine that loads partitions; without slots, the one that serves fine-grained reads (set
  // once by Create: reading the pointer needs no lock).
  const IoEngine& engine() const SKIFF_NO_THREAD_SAFETY_ANALYSIS {
    return slots_.empty() ? *fine_engine_ : *load_engine_;
  }
  std::vector<uint32_t> eviction_log() const;

 private:
  friend class PartitionPin;
  enum class SlotState { kFree, kLoading, kResident, kFailed };
  struct Slot {
    SlotState state = SlotState::kFree;
    int64_t partition = -1;
    uint32_t pins = 0;
    uint64_t last_use_tick = 0;
    std::byte* memory = nullptr;        // `capacity` bytes of slot_memory_
    uint64_t capacity = 0;              // slot_bytes_, or its partition's size when packed_
    std::vector<Extent> extents;        // of the partition held
    std::vector<uint64_t> data_offset;  // where extent i's exact bytes start in `memory`
    Status error;                       // kFailed: why
    uint64_t pin_tick = 0;              // tick of the last Pin/Unpin (a load is not a use)
  };

  BufferPool(const PartitionSource* source, const BufferPoolOptions& options);
  // Reads `reads` as coalesced chunks through the scratch's slots; each landed, verified chunk is
  // passed to `deliver` (the sorted order, the chunk's range of it, its file bytes [lo, hi) and
  // their data), in chunk order when `in_order`, else as they land.
  using ChunkFn = std::function<Status(std::span<const uint32_t> order, size_t first, size_t last,
                                       uint64_t lo, uint64_t hi, const std::byte* base)>;
  Status ReadChunks(std::span<const FineRead> reads, uint64_t* bytes_read, bool in_order,
                    const ChunkFn& deliver);
  void Unpin(uint32_t slot);
  void IoThreadLoop();
  // Picks the next load: a slot and a partition; false when there is nothing to do.
  bool ChooseLoad(uint32_t* slot, uint32_t* partition) SKIFF_REQUIRES(mu_);
  // A slot to load into: a free one, else the unpinned resident partition used furthest in the
  // future. `must_be_used_after` (a plan position, or kNever) restricts victims to partitions not
  // needed before it. `for_prefetch` also spares partitions touched since the plan cursor last
  // moved: they belong to the working set in use now, even when the plan has moved past them.
  // `spare_recent` does the same for a demand load of a partition pinned off the plan; when
  // nothing else can go, a demand load still evicts (falls back to plain Belady).
  int64_t ChooseVictim(uint64_t must_be_used_after, bool for_prefetch = false,
                       bool spare_recent = false) SKIFF_REQUIRES(mu_);
  uint64_t NextUse(uint32_t partition) const SKIFF_REQUIRES(mu_);  // plan position, or kNever
  // Packed: `partition`'s own slot when it is free to load into, else -1.
  int64_t OwnSlot(uint32_t partition) const SKIFF_REQUIRES(mu_);
  Status LoadInto(Slot& slot, uint32_t partition) SKIFF_EXCLUDES(mu_);

  static constexpr uint64_t kNever = ~0ull;
  // ReadRanges cuts its scratch into slots of this size (one coalesced chunk each) and keeps them
  // all reading: 32 reads in flight with the default 4 MiB scratch, where the SSD gives full
  // bandwidth (iobench: 128 KiB at QD 32), and each chunk is verified and copied out while the
  // others are still reading.
  static constexpr uint64_t kFineSlotBytes = 128ull << 10;

  // Constant after construction.
  const PartitionSource* const source_;
  const BufferPoolOptions options_;
  uint64_t slot_bytes_ = 0;
  bool packed_ = false;
  AlignedBuffer slot_memory_;
  AlignedBuffer fine_scratch_;
  std::unique_ptr<IoEngine> load_engine_;  // used by the I/O thread only
  std::vector<uint32_t> load_file_ids_;

  mutable Mutex mu_;
  CondVar loaded_cv_;  // a load finished or a pin was released
  CondVar io_cv_;      // work for the I/O thread
  // Fixed in number at creation. Guarded by mu_, except that a pinned slot's memory, extents and
  // offsets do not change while it is pinned, so PartitionPin reads them without the lock -- which
  // the analysis cannot express per field, so the vector carries no annotation.
  std::vector<Slot> slots_;
  std::vector<int32_t> slot_of_ SKIFF_GUARDED_BY(mu_);   // partition -> slot or -1
  std::deque<uint32_t> demand_ SKIFF_GUARDED_BY(mu_);    // partitions Pin waits for
  std::vector<uint32_t> waiting_ SKIFF_GUARDED_BY(mu_);  // Pin calls waiting, per partition
  std::vector<bool> off_plan_ SKIFF_GUARDED_BY(mu_);  // last Pin of the partition was off the plan
  std::vector<uint32_t> plan_ SKIFF_GUARDED_BY(mu_);
  // Plan positions per partition.
  std::vector<std::vector<uint64_t>> occurrences_ SKIFF_GUARDED_BY(mu_);
  uint64_t plan_cursor_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t tick_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t cursor_tick_ SKIFF_GUARDED_BY(mu_) = 0;  // tick_ when plan_cursor_ last moved
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::vector<uint32_t> eviction_log_ SKIFF_GUARDED_BY(mu_);
  BufferPoolStats counters_ SKIFF_GUARDED_BY(mu_);  // load-side counters

  Mutex fine_mu_;  // serialises ReadRanges
  std::unique_ptr<IoEngine> fine_engine_ SKIFF_GUARDED_BY(fine_mu_);
  std::vector<uint32_t> fine_file_ids_;
  std::atomic<uint64_t> fine_reads_{0};
  std::atomic<uint64_t> fine_bytes_read_{0};
  std::atomic<uint64_t> fine_reads_issued_{0};

  std::thread io_thread_;
};

}  // namespace skiff::storage
