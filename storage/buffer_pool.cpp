#include "skiff/storage/buffer_pool.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "skiff/log.h"
#include "skiff/mutex.h"
#include "skiff/units.h"

namespace skiff::storage {
namespace {

uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
constexpr uint64_t kPage = 4096;
// io_uring registers at most 1 GiB per buffer; larger slot memory is registered in 1 GiB regions.
constexpr uint64_t kMaxRegisteredRegionBytes = 1ull << 30;

uint64_t ExtentFootprint(const Extent& e, uint64_t a) {
  if (e.length == 0) return 0;
  return AlignUp(e.offset + e.length, a) - AlignDown(e.offset, a);
}

uint64_t PartitionFootprint(const PartitionSource& source, uint32_t p) {
  uint64_t bytes = 0;
  for (const Extent& e : source.Extents(p)) bytes += ExtentFootprint(e, source.read_alignment());
  return bytes;
}

uint64_t SlotBytes(const PartitionSource& source) {
  uint64_t max_bytes = 0;
  for (uint32_t p = 0; p < source.num_partitions(); ++p) {
    max_bytes = std::max(max_bytes, PartitionFootprint(source, p));
  }
  return std::max<uint64_t>(kPage, AlignUp(max_bytes, kPage));
}

// Partition p's slot in a packed pool (BufferPool::packed()).
uint64_t PackedSlotBytes(const PartitionSource& source, uint32_t p) {
  return std::max<uint64_t>(kPage, AlignUp(PartitionFootprint(source, p), kPage));
}

// Every partition in a slot of its own sized to it.
uint64_t PackedBytes(const PartitionSource& source) {
  uint64_t bytes = 0;
  for (uint32_t p = 0; p < source.num_partitions(); ++p) bytes += PackedSlotBytes(source, p);
  return bytes;
}

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Status RegisterInRegions(IoEngine& engine, std::byte* base, uint64_t bytes, std::byte* base2,
                         uint64_t bytes2) {
  std::vector<std::span<std::byte>> regions;
  for (uint64_t off = 0; off < bytes; off += kMaxRegisteredRegionBytes) {
    regions.emplace_back(base + off, std::min(kMaxRegisteredRegionBytes, bytes - off));
  }
  if (bytes2 > 0) regions.emplace_back(base2, bytes2);
  return engine.RegisterBuffers(regions);
}

}  // namespace

// --- PartitionPin
// ---------------------------------------------------------------------------------

PartitionPin::PartitionPin(PartitionPin&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      slot_(other.slot_),
      partition_(other.partition_) {}

PartitionPin& PartitionPin::operator=(PartitionPin&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    slot_ = other.slot_;
    partition_ = other.partition_;
  }
  return *this;
}

void PartitionPin::Release() {
  if (pool_ != nullptr) std::exchange(pool_, nullptr)->Unpin(slot_);
}

size_t PartitionPin::num_extents() const {
  SKIFF_CHECK(valid());
  // extents of a pinned slot do not change while pinned; reading them needs no lock.
  return pool_->slots_[slot_].extents.size();
}

std::span<const std::byte> PartitionPin::extent(size_t i) const {
  SKIFF_CHECK(valid());
  const auto& slot = pool_->slots_[slot_];
  SKIFF_CHECK(i < slot.extents.size());
  return {slot.memory + slot.data_offset[i], slot.extents[i].length};
}

// --- BufferPool
// -----------------------------------------------------------------------------------

uint64_t BufferPool::BudgetFor(const PartitionSource& source, uint32_t partitions,
                               const BufferPoolOptions& options) {
  const uint64_t a = source.read_alignment();
  return partitions * SlotBytes(source) +
         AlignUp(std::max<uint64_t>(options.fine_read_scratch_bytes, a),
                 std::max<uint64_t>(a, kPage));
}

uint64_t BufferPool::PackedBudgetFor(const PartitionSource& source,
                                     const BufferPoolOptions& options) {
  return PackedBytes(source) + BudgetFor(source, 0, options);
}

BufferPool::BufferPool(const PartitionSource* source, const BufferPoolOptions& options)
    : source_(source), options_(options) {}

Result<std::unique_ptr<BufferPool>> BufferPool::Create(const PartitionSource* source,
                                                       const BufferPoolOptions& options) {
  if (source == nullptr || source->num_partitions() == 0) {
    return Status::InvalidArgument("buffer pool: the partition source has no partitions");
  }
  if (options.budget_bytes == 0)
    return Status::InvalidArgument("buffer pool: the memory budget is 0");
  const uint32_t a = source->read_alignment();
  SKIFF_CHECK_MSG(a >= 512 && (a & (a - 1)) == 0, "read_alignment must be a power of two >= 512");
  const uint32_t num_partitions = source->num_partitions();
  const uint32_t min_slots = std::min<uint32_t>(options.min_resident_partitions, num_partitions);
  const uint64_t slot_bytes = SlotBytes(*source);
  const uint64_t scratch_bytes =
      AlignUp(std::max<uint64_t>(options.fine_read_scratch_bytes, a), std::max<uint64_t>(a, kPage));
  const uint64_t needed = min_slots * slot_bytes + scratch_bytes;
  const uint64_t packed_bytes = PackedBytes(*source);
  const bool packed = options.budget_bytes >= packed_bytes + scratch_bytes;
  if (!packed && options.budget_bytes < needed) {
    return Status::ResourceExhausted(
        "buffer pool: a budget of " + FormatBytes(options.budget_bytes) + " cannot hold " +
        std::to_string(min_slots) + " partitions of up to " + FormatBytes(slot_bytes) +
        " each plus " + FormatBytes(scratch_bytes) + " of fine-read scratch; needs at least " +
        std::to_string(needed) + " bytes (" + FormatBytes(needed) +
        "): raise --memory or use more, smaller partitions");
  }
  const uint64_t num_slots =
      packed
          ? num_partitions
          : std::min<uint64_t>(num_partitions, (options.budget_bytes - scratch_bytes) / slot_bytes);

  std::unique_ptr<BufferPool> pool(new BufferPool(source, options));
  pool->slot_bytes_ = slot_bytes;
  pool->packed_ = packed;
  SKIFF_ASSIGN_OR_RETURN(pool->slot_memory_,
                         AlignedBuffer::Allocate(packed ? packed_bytes : num_slots * slot_bytes));
  SKIFF_ASSIGN_OR_RETURN(pool->fine_scratch_, AlignedBuffer::Allocate(scratch_bytes));
  SKIFF_CHECK_MSG(pool->allocated_bytes() <= options.budget_bytes,
                  "buffer pool exceeds its budget");
  pool->slots_.resize(num_slots);
  uint64_t at = 0;
  for (uint64_t s = 0; s < num_slots; ++s) {
    Slot& slot = pool->slots_[s];
    slot.memory = pool->slot_memory_.data() + at;
    slot.capacity = packed ? PackedSlotBytes(*source, static_cast<uint32_t>(s)) : slot_bytes;
    at += slot.capacity;
  }
  {
    MutexLock lock(&pool->mu_);  // no other thread yet: for the analysis
    pool->slot_of_.assign(num_partitions, -1);
    pool->waiting_.assign(num_partitions, 0);
    pool->off_plan_.assign(num_partitions, false);
  }
  MutexLock fine_lock(&pool->fine_mu_);
  SKIFF_ASSIGN_OR_RETURN(pool->load_engine_, CreateIoEngine(options.engine));
  SKIFF_ASSIGN_OR_RETURN(pool->fine_engine_, CreateIoEngine(options.engine));
  for (uint32_t f = 0; f < source->num_files(); ++f) {
    SKIFF_ASSIGN_OR_RETURN(uint32_t id, pool->load_engine_->AddFile(source->file(f)));
    pool->load_file_ids_.push_back(id);
    SKIFF_ASSIGN_OR_RETURN(uint32_t fid, pool->fine_engine_->AddFile(source->file(f)));
    pool->fine_file_ids_.push_back(fid);
  }
  SKIFF_RETURN_IF_ERROR(RegisterInRegions(*pool->load_engine_, pool->slot_memory_.data(),
                                          pool->slot_memory_.size(), nullptr, 0));
  SKIFF_RETURN_IF_ERROR(RegisterInRegions(*pool->fine_engine_, pool->fine_scratch_.data(),
                                          pool->fine_scratch_.size(), nullptr, 0));
  fine_lock.Unlock();
  pool->io_thread_ = std::thread([p = pool.get()] { p->IoThreadLoop(); });
  return pool;
}

BufferPool::~BufferPool() {
  {
    MutexLock lock(&mu_);
    for (const Slot& s : slots_)
      SKIFF_CHECK_MSG(s.pins == 0, "buffer pool destroyed with pins held");
    stopping_ = true;
  }
  io_cv_.SignalAll();
  if (io_thread_.joinable()) io_thread_.join();
}

void BufferPool::SetPlan(std::vector<uint32_t> plan) {
  MutexLock lock(&mu_);
  for (uint32_t p : plan) SKIFF_CHECK_MSG(p < slot_of_.size(), "plan names an unknown partition");
  plan_ = std::move(plan);
  plan_cursor_ = 0;
  cursor_tick_ = ++tick_;
  occurrences_.assign(slot_of_.size(), {});
  for (uint64_t i = 0; i < plan_.size(); ++i) occurrences_[plan_[i]].push_back(i);
  // Failed prefetches of the old plan are forgotten; a Pin retries them.
  for (Slot& s : slots_) {
    if (s.state == SlotState::kFailed && s.pins == 0 && waiting_[s.partition] == 0) {
      slot_of_[s.partition] = -1;
      s = Slot{SlotState::kFree, -1, 0, 0, s.memory, s.capacity, {}, {}, Status::Ok()};
    }
  }
  io_cv_.SignalAll();
}

uint64_t BufferPool::NextUse(uint32_t partition) const {
  if (plan_.empty()) return kNever;
  const auto& occ = occurrences_[partition];
  auto it = std::lower_bound(occ.begin(), occ.end(), plan_cursor_);
  return it == occ.end() ? kNever : *it;
}

int64_t BufferPool::ChooseVictim(uint64_t must_be_used_after, bool for_prefetch,
                                 bool spare_recent) {
  if (spare_recent) {
    const int64_t v = ChooseVictim(must_be_used_after, /*for_prefetch=*/true);
    if (v >= 0) return v;
  }
  int64_t best = -1;
  uint64_t best_next = 0, best_tick = 0;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    if (slot.state == SlotState::kFree) return static_cast<int64_t>(s);
    if (slot.state != SlotState::kResident || slot.pins > 0) continue;
    if (waiting_[static_cast<uint32_t>(slot.partition)] > 0) continue;
    // Without this, a consumer that pins the current partitions out of plan order (after pinning
    // the next one ahead, which moves the cursor) would see prefetch evict them, demand-load them
    // back, and prefetch evict them again: a livelock of loads. Each partition can now be evicted
    // by prefetch at most once per cursor move.
    if (for_prefetch && slot.pin_tick >= cursor_tick_) continue;
    const uint64_t next = NextUse(static_cast<uint32_t>(slot.partition));
    if (must_be_used_after != kNever && next <= must_be_used_after) continue;
    if (best < 0 || next > best_next || (next == best_next && slot.last_use_tick < best_tick)) {
      best = static_cast<int64_t>(s);
      best_next = next;
      best_tick = slot.last_use_tick;
    }
  }
  return best;
}

int64_t BufferPool::OwnSlot(uint32_t partition) const {
  // Free unless it still holds the partition's failed load, which its Pin frees once reported.
  return slots_[partition].state == SlotState::kFree ? partition : -1;
}

bool BufferPool::ChooseLoad(uint32_t* slot_out, uint32_t* partition_out) {
  int64_t victim = -1;
  uint32_t partition = 0;
  while (!demand_.empty()) {
    partition = demand_.front();
    if (slot_of_[partition] >= 0) {  // already loading or resident (prefetched)
      demand_.pop_front();
      continue;
    }
    // A partition pinned off the plan (e.g. the current working set, after the next partition was
    // pinned ahead) is loaded without evicting the rest of the working set where possible.
    victim = packed_ ? OwnSlot(partition)
                     : ChooseVictim(kNever, false, /*spare_recent=*/off_plan_[partition]);
    if (victim < 0) return false;  // every slot pinned or loading: wait for an unpin
    demand_.pop_front();
    break;
  }
  if (victim < 0 && options_.prefetch && !plan_.empty()) {
    // The next planned partitions not yet resident, within one buffer's worth of lookahead.
    uint64_t seen = 0;
    for (uint64_t i = plan_cursor_; i < plan_.size() && seen < slots_.size(); ++i) {
      const uint32_t p = plan_[i];
      if (NextUse(p) != i) continue;  // a repeat within the window
      ++seen;
      if (slot_of_[p] >= 0) continue;
      // Only what is needed later than p.
      victim = packed_ ? OwnSlot(p) : ChooseVictim(i, /*for_prefetch=*/true);
      if (victim >= 0) partition = p;
      break;
    }
  }
  if (victim < 0) return false;
  Slot& slot = slots_[victim];
  if (slot.partition >= 0) {
    slot_of_[slot.partition] = -1;
    ++counters_.evictions;
    if (options_.record_evictions) eviction_log_.push_back(static_cast<uint32_t>(slot.partition));
  }
  slot.state = SlotState::kLoading;
  slot.partition = partition;
  slot.error = Status::Ok();
  slot.extents = source_->Extents(partition);
  slot.data_offset.clear();
  const uint64_t a = source_->read_alignment();
  uint64_t pos = 0;
  for (const Extent& e : slot.extents) {
    SKIFF_CHECK(e.file < source_->num_files());
    slot.data_offset.push_back(pos + (e.length ? e.offset - AlignDown(e.offset, a) : 0));
    pos += ExtentFootprint(e, a);
  }
  SKIFF_CHECK_MSG(pos <= slot.capacity, "partition larger than its slot");
  slot_of_[partition] = static_cast<int32_t>(victim);
  *slot_out = static_cast<uint32_t>(victim);
  *partition_out = partition;
  return true;
}

Status BufferPool::LoadInto(Slot& slot, uint32_t partition) {
  const uint64_t a = source_->read_alignment();
  std::vector<ReadRequest> reqs;
  uint64_t pos = 0;
  for (const Extent& e : slot.extents) {
    const uint64_t bytes = ExtentFootprint(e, a);
    if (bytes == 0) continue;
    reqs.push_back(ReadRequest{load_file_ids_[e.file], AlignDown(e.offset, a), bytes,
                               slot.memory + pos, e.file});
    pos += bytes;
  }
  Status st = load_engine_->ReadAll(reqs);
  if (st.ok() && options_.verify_checksums) {
    for (const ReadRequest& r : reqs) {
      st = source_->Verify(static_cast<uint32_t>(r.tag), r.offset, static_cast<std::byte*>(r.dst),
                           r.length);
      if (!st.ok()) break;
    }
  }
  MutexLock lock(&mu_);
  counters_.bytes_read_total += pos;
  return st.WithContext("loading partition " + std::to_string(partition));
}

void BufferPool::IoThreadLoop() {
  MutexLock lock(&mu_);
  for (;;) {
    uint32_t slot = 0, partition = 0;
    while (!stopping_ && !ChooseLoad(&slot, &partition)) io_cv_.Wait(&mu_);
    if (stopping_) return;
    lock.Unlock();
    const uint64_t reads_before = load_engine_->reads_issued();
    Status st = LoadInto(slots_[slot], partition);
    const uint64_t reads = load_engine_->reads_issued() - reads_before;
    lock.Lock();
    counters_.reads_issued += reads;
    ++counters_.partition_loads;
    Slot& s = slots_[slot];
    s.state = st.ok() ? SlotState::kResident : SlotState::kFailed;
    s.error = std::move(st);
    s.last_use_tick = ++tick_;
    loaded_cv_.SignalAll();
  }
}

Result<PartitionPin> BufferPool::Pin(uint32_t partition) {
  MutexLock lock(&mu_);
  SKIFF_CHECK_MSG(partition < slot_of_.size(), "Pin of an unknown partition");
  SKIFF_CHECK_MSG(!slots_.empty(), "Pin on a buffer pool without slots");
  if (!plan_.empty()) {
    const auto& occ = occurrences_[partition];
    auto it = std::lower_bound(occ.begin(), occ.end(), plan_cursor_);
    if (it != occ.end()) {
      plan_cursor_ = *it + 1;
      cursor_tick_ = ++tick_;
    }
    off_plan_[partition] = it == occ.end();
    io_cv_.SignalAll();  // the prefetch window moved
  }
  uint64_t wait_start_ns = 0;
  for (;;) {
    const int32_t s = slot_of_[partition];
    if (s >= 0 && slots_[s].state == SlotState::kResident) {
      Slot& slot = slots_[s];
      ++slot.pins;
      slot.last_use_tick = ++tick_;
      slot.pin_tick = tick_;
      if (wait_start_ns != 0) {
        --waiting_[partition];
        ++counters_.misses;
        counters_.stall_ns += NowNs() - wait_start_ns;
      } else {
        ++counters_.hits;
      }
      return PartitionPin(this, static_cast<uint32_t>(s), partition);
    }
    if (s >= 0 && slots_[s].state == SlotState::kFailed) {
      Slot& slot = slots_[s];
      if (wait_start_ns != 0) --waiting_[partition];
      Status st = slot.error;
      if (waiting_[partition] == 0 && slot.pins == 0) {  // the last caller told frees the slot
        slot_of_[partition] = -1;
        slot = Slot{SlotState::kFree, -1, 0, 0, slot.memory, slot.capacity, {}, {}, Status::Ok()};
      }
      ++counters_.misses;
      if (wait_start_ns != 0) counters_.stall_ns += NowNs() - wait_start_ns;
      io_cv_.SignalAll();
      return st;
    }
    if (s < 0 && std::find(demand_.begin(), demand_.end(), partition) == demand_.end()) {
      demand_.push_back(partition);
      io_cv_.SignalAll();
    }
    if (wait_start_ns == 0) {
      // While a Pin waits for it, a partition is not evicted: otherwise a prefetch could evict it
      // between the end of its load and this call taking the pin.
      wait_start_ns = NowNs();
      ++waiting_[partition];
    }
    loaded_cv_.Wait(&mu_);
  }
}

void BufferPool::Unpin(uint32_t slot) {
  {
    MutexLock lock(&mu_);
    Slot& s = slots_[slot];
    SKIFF_CHECK(s.pins > 0 && s.state == SlotState::kResident);
    --s.pins;
    s.last_use_tick = ++tick_;
    s.pin_tick = tick_;
  }
  io_cv_.SignalAll();
}

bool BufferPool::IsResident(uint32_t partition) const {
  MutexLock lock(&mu_);
  const int32_t s = slot_of_[partition];
  return s >= 0 && slots_[s].state == SlotState::kResident;
}

BufferPoolStats BufferPool::stats() const {
  BufferPoolStats out;
  {
    MutexLock lock(&mu_);
    out = counters_;
  }
  out.fine_reads = fine_reads_.load();
  out.fine_bytes_read = fine_bytes_read_.load();
  out.bytes_read_total += out.fine_bytes_read;
  out.reads_issued += fine_reads_issued_.load();
  return out;
}

std::vector<uint32_t> BufferPool::eviction_log() const {
  MutexLock lock(&mu_);
  return eviction_log_;
}

namespace {

// Aligned, coalesced reads of at most `slot` bytes each (see BufferPool::ReadRanges).
struct FineChunk {
  uint32_t file;
  uint64_t lo, hi;
  size_t first, last;  // range of the sorted order whose reads may intersect this chunk
};

std::vector<uint32_t> FileOrder(std::span<const FineRead> reads) {
  std::vector<uint32_t> order(reads.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto before = [&](uint32_t x, uint32_t y) {
    return reads[x].file != reads[y].file ? reads[x].file < reads[y].file
                                          : reads[x].offset < reads[y].offset;
  };
  // A row stream asks in file order already (rows by increasing node): nothing to sort.
  if (!std::is_sorted(order.begin(), order.end(), before)) {
    std::stable_sort(order.begin(), order.end(), before);
  }
  return order;
}

std::vector<FineChunk> Coalesce(std::span<const FineRead> reads, std::span<const uint32_t> order,
                                uint64_t alignment, uint64_t merge_gap, uint64_t slot) {
  std::vector<FineChunk> chunks;
  for (size_t k = 0; k < order.size(); ++k) {
    const FineRead& r = reads[order[k]];
    if (r.length == 0) continue;
    const uint64_t lo = AlignDown(r.offset, alignment);
    const uint64_t hi = AlignUp(r.offset + r.length, alignment);
    if (!chunks.empty() && chunks.back().file == r.file && lo >= chunks.back().lo &&
        lo <= chunks.back().hi + merge_gap &&
        std::max(hi, chunks.back().hi) - chunks.back().lo <= slot) {
      chunks.back().hi = std::max(chunks.back().hi, hi);
      chunks.back().last = k + 1;
      continue;
    }
    // A read larger than a slot is split into slot-sized chunks.
    for (uint64_t c = lo; c < hi; c += slot) {
      chunks.push_back({r.file, c, std::min(hi, c + slot), k, k + 1});
    }
  }
  return chunks;
}

}  // namespace

Status BufferPool::ReadRanges(std::span<const FineRead> reads, uint64_t* bytes_read) {
  for (const FineRead& r : reads) SKIFF_CHECK(r.dst != nullptr);
  // Chunks land in any order; each copies its part of every read it intersects.
  return ReadChunks(reads, bytes_read, /*in_order=*/false,
                    [&](std::span<const uint32_t> order, size_t first, size_t last, uint64_t lo,
                        uint64_t hi, const std::byte* base) -> Status {
                      for (size_t k = first; k < last; ++k) {
                        const FineRead& r = reads[order[k]];
                        const uint64_t from = std::max(r.offset, lo);
                        const uint64_t to = std::min(r.offset + r.length, hi);
                        if (from >= to) continue;
                        std::memcpy(static_cast<std::byte*>(r.dst) + (from - r.offset),
                                    base + (from - lo), to - from);
                      }
                      return Status::Ok();
                    });
}

Status BufferPool::StreamRanges(std::span<const FineRead> reads, const StreamFn& consume,
                                uint64_t* bytes_read) {
  // In order, and each read within one chunk (a read no larger than a slot is never split), so
  // every read is handed over whole, once, in file order.
  for (const FineRead& r : reads) SKIFF_CHECK(r.length <= kFineSlotBytes);
  return ReadChunks(reads, bytes_read, /*in_order=*/true,
                    [&](std::span<const uint32_t> order, size_t first, size_t last, uint64_t lo,
                        uint64_t hi, const std::byte* base) -> Status {
                      for (size_t k = first; k < last; ++k) {
                        const FineRead& r = reads[order[k]];
                        // A read that began in an earlier chunk was handed over there.
                        if (r.length == 0 || r.offset < lo) continue;
                        SKIFF_CHECK(r.offset + r.length <= hi);
                        SKIFF_RETURN_IF_ERROR(consume(order[k], base + (r.offset - lo)));
                      }
                      return Status::Ok();
                    });
}

Status BufferPool::ReadChunks(std::span<const FineRead> reads, uint64_t* bytes_read, bool in_order,
                              const ChunkFn& deliver) {
  if (reads.empty()) return Status::Ok();
  MutexLock lock(&fine_mu_);
  for (const FineRead& r : reads) SKIFF_CHECK(r.file < source_->num_files());
  const uint64_t a = source_->read_alignment();
  // The scratch is cut into equal slots, one chunk each: many chunks in flight at once.
  const uint64_t slot = std::min<uint64_t>(fine_scratch_.size(), AlignUp(kFineSlotBytes, a));
  const size_t num_slots = fine_scratch_.size() / slot;
  const std::vector<uint32_t> order = FileOrder(reads);
  const std::vector<FineChunk> chunks =
      Coalesce(reads, order, a, options_.fine_read_merge_gap, slot);
  IoEngine& engine = *fine_engine_;  // used by the lambdas below, under the same lock
  const uint64_t reads_before = engine.reads_issued();
  uint64_t bytes = 0;
  Status result;
  // Keep every slot reading: as each chunk lands it is verified and delivered (in order: once
  // every earlier chunk has been), and its slot takes the next chunk straight away.
  std::vector<size_t> free_slots(num_slots);
  for (size_t i = 0; i < num_slots; ++i) free_slots[i] = num_slots - 1 - i;
  std::vector<size_t> slot_of_chunk(chunks.size());
  std::vector<char> landed(chunks.size(), 0);
  size_t next = 0;       // first chunk not submitted
  size_t delivered = 0;  // in order: first chunk not delivered
  auto submit = [&](size_t max_count) {
    std::vector<ReadRequest> batch;
    while (result.ok() && next < chunks.size() && !free_slots.empty() && batch.size() < max_count) {
      const FineChunk& ch = chunks[next];
      slot_of_chunk[next] = free_slots.back();
      free_slots.pop_back();
      batch.push_back({fine_file_ids_[ch.file], ch.lo, ch.hi - ch.lo,
                       fine_scratch_.data() + slot_of_chunk[next] * slot, next});
      bytes += ch.hi - ch.lo;
      ++next;
    }
    if (batch.empty()) return;
    const Status submitted = engine.Submit(batch);
    if (!submitted.ok()) {
      result = submitted;  // nothing of `batch` was queued; wait for what is in flight
      next = chunks.size();
    }
  };
  // Verifies and delivers chunk c, then its slot takes the next read at once: a run of chunks
  // landed behind a slow one is delivered while the reads that replace them are in flight.
  auto finish = [&](size_t c) {
    const FineChunk& ch = chunks[c];
    const std::byte* base = fine_scratch_.data() + slot_of_chunk[c] * slot;
    if (result.ok() && options_.verify_checksums) {
      result = source_->Verify(ch.file, ch.lo, base, ch.hi - ch.lo);
    }
    if (result.ok()) result = deliver(order, ch.first, ch.last, ch.lo, ch.hi, base);
    if (!result.ok()) next = chunks.size();  // submit nothing more; wait for the reads in flight
    free_slots.push_back(slot_of_chunk[c]);
    submit(num_slots);
  };
  submit(num_slots);
  std::vector<ReadCompletion> done;
  while (engine.outstanding() > 0) {
    done.clear();
    engine.Reap(1, &done);
    for (const ReadCompletion& c : done) {
      if (result.ok()) result = c.status;
      if (!in_order) {
        finish(c.tag);
      } else {
        landed[c.tag] = 1;
        while (delivered < next && landed[delivered]) finish(delivered++);
      }
    }
  }
  fine_reads_ += reads.size();
  fine_bytes_read_ += bytes;
  if (bytes_read != nullptr) *bytes_read += bytes;
  fine_reads_issued_ += engine.reads_issued() - reads_before;
  return result.WithContext("fine-grained read");
}

}  // namespace skiff::storage
