#include "skiff/convert/id_map_builder.h"

#include <malloc.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <limits>
#include <queue>
#include <thread>

#include "skiff/convert/id_map.h"
#include "skiff/convert/line_reader.h"
#include "skiff/convert/spill_file.h"
#include "skiff/mutex.h"
#include "skiff/parallel_sort.h"
#include "skiff/prefetch.h"
#include "skiff/progress.h"

namespace skiff::convert {

namespace {

// A growing array in fixed blocks: no reallocation copies (and no 2x transient) as it grows, so
// its bytes can be charged to the budget block by block.
template <typename T>
class BlockArray {
 public:
  explicit BlockArray(size_t block_entries) : block_entries_(block_entries) {}
  size_t size() const { return size_; }
  uint64_t bytes() const { return blocks_.size() * block_entries_ * sizeof(T); }
  // Bytes the next push_back allocates (0 when the current block has room).
  uint64_t next_push_bytes() const {
    return size_ % block_entries_ == 0 ? block_entries_ * sizeof(T) : 0;
  }
  void push_back(const T& value) {
    if (size_ % block_entries_ == 0) blocks_.push_back(std::make_unique<T[]>(block_entries_));
    blocks_.back()[size_ % block_entries_] = value;
    ++size_;
  }
  const T& operator[](size_t i) const { return blocks_[i / block_entries_][i % block_entries_]; }
  void clear() {
    blocks_.clear();
    size_ = 0;
  }

 private:
  const size_t block_entries_;
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
};

struct LocalEdge {
  uint32_t src = 0;
  uint32_t dst = 0;
};
static_assert(sizeof(LocalEdge) == 8, "B files store an edge as two native uint32");

// An entry of an M file: local ID `local` of this run is the raw ID first seen as `first_local`
// of run `first_run`.
struct FirstSeen {
  uint32_t local = 0;
  uint32_t first_run = 0;
  uint32_t first_local = 0;
};
static_assert(sizeof(FirstSeen) == 12, "M files store three native uint32");

// A raw ID in an L file: its length (uint32), then its bytes.
Status AppendId(SpillWriter& out, std::string_view raw) {
  SKIFF_RETURN_IF_ERROR(out.AppendValue(static_cast<uint32_t>(raw.size())));
  return out.Append(raw.data(), raw.size());
}
Status ReadId(SpillReader& in, std::string_view* raw) {
  uint32_t len = 0;
  SKIFF_RETURN_IF_ERROR(in.ReadValue(&len));
  return in.Read(len, raw);
}

uint64_t HashRaw(std::string_view raw) { return std::hash<std::string_view>{}(raw); }

// The first 8 bytes, big-endian, zero-padded: comparing these compares the prefixes as memcmp does.
uint64_t Prefix(std::string_view raw) {
  uint64_t p = 0;
  const size_t n = std::min<size_t>(raw.size(), 8);
  for (size_t i = 0; i < n; ++i) p |= uint64_t{static_cast<uint8_t>(raw[i])} << (56 - 8 * i);
  return p;
}

}  // namespace

// --- One run in memory --------------------------------------------------------------------------

// An edge whose endpoints are hashed, waiting in a batch (see IdMapBuilder::Add).
struct HashedEdge {
  std::string_view src, dst;
  uint64_t src_hash = 0, dst_hash = 0;
};

class IdMapBuilder::Run {
 public:
  // A table slot: the high half of the raw ID's hash, its local ID + 1 (0: empty) and where its
  // bytes are in the arena, so a probe reads one slot and one arena entry.
  struct Slot {
    uint32_t tag = 0;
    uint32_t local_plus_1 = 0;
    const char* entry = nullptr;  // arena entry: uint32 length, then the bytes
  };
  static_assert(sizeof(Slot) == 16);

  explicit Run(uint64_t budget)
      : budget_(budget),
        arena_block_bytes_(std::clamp<uint64_t>(budget / 64, 4 << 10, 8 << 20)),
        edges_(std::clamp<size_t>(budget / 512 / sizeof(LocalEdge), 512, 1 << 18)) {
    table_.assign(kInitialSlots, Slot{});
  }

  // Prefetches the table slots of a batch, then the arena entries those slots point to: the
  // probes of TryAdd then find them in cache instead of waiting for each miss in turn.
  void Prefetch(const HashedEdge* batch, size_t n) const {
    const size_t mask = table_.size() - 1;
    for (size_t i = 0; i < n; ++i) {
      PrefetchRead(&table_[batch[i].src_hash & mask]);
      PrefetchRead(&table_[batch[i].dst_hash & mask]);
    }
    for (size_t i = 0; i < n; ++i) {
      for (const uint64_t h : {batch[i].src_hash, batch[i].dst_hash}) {
        const Slot& slot = table_[h & mask];
        if (slot.tag == static_cast<uint32_t>(h >> 32)) PrefetchRead(slot.entry);
      }
    }
  }

  // Adds an edge; false (nothing added) when it would take the run over its budget. An empty run
  // always accepts, so every run makes progress.
  bool TryAdd(const HashedEdge& e) {
    if (edges_.size() > 0 &&
        (ProjectedBytes(e.src.size() + e.dst.size()) > budget_ || distinct_ > kMaxRunIds - 2)) {
      return false;
    }
    if (NeedsGrowth()) Rehash(table_.size() * 2);
    const uint32_t s = Intern(e.src, e.src_hash);
    const uint32_t d = Intern(e.dst, e.dst_hash);
    edges_.push_back(LocalEdge{s, d});
    return true;
  }

  bool empty() const { return edges_.size() == 0; }
  uint32_t distinct() const { return distinct_; }
  size_t edge_count() const { return edges_.size(); }
  const LocalEdge& edge(size_t i) const { return edges_[i]; }
  uint64_t edge_bytes() const { return edges_.bytes(); }

  // The raw IDs by local ID (views into the arena): 16 bytes per ID, counted as spill scratch.
  std::vector<std::string_view> Raws() const {
    std::vector<std::string_view> raws;
    raws.reserve(distinct_);
    for (size_t b = 0; b < arena_.size(); ++b) {
      const size_t used = b + 1 == arena_.size() ? arena_used_ : arena_block_used_[b];
      for (size_t pos = 0; pos < used;) {
        raws.push_back(EntryView(arena_[b].data() + pos));
        pos += sizeof(uint32_t) + raws.back().size();
      }
    }
    SKIFF_CHECK(raws.size() == distinct_);
    return raws;
  }

  // Local IDs in byte order of their raw IDs (16 bytes per ID, counted as spill scratch).
  struct SortKey {
    uint64_t prefix;
    uint32_t local;
  };
  static std::vector<SortKey> SortedLocals(const std::vector<std::string_view>& raws) {
    std::vector<SortKey> keys(raws.size());
    for (uint32_t l = 0; l < keys.size(); ++l) keys[l] = SortKey{Prefix(raws[l]), l};
    ParallelSort(keys.begin(), keys.end(), DefaultSortThreads(),
                 [&](const SortKey& a, const SortKey& b) {
                   if (a.prefix != b.prefix) return a.prefix < b.prefix;
                   return raws[a.local] < raws[b.local];
                 });
    return keys;
  }

  // Frees the hash table: the run takes no more edges, and the spill's scratch takes its place.
  void ReleaseTable() {
    table_.clear();
    table_.shrink_to_fit();
  }
  // Frees the raw IDs and the table, keeping the edges (for an in-memory replay).
  void ReleaseIds() {
    ReleaseTable();
    arena_.clear();
    arena_.shrink_to_fit();
  }

 private:
  static constexpr size_t kInitialSlots = 1024;
  // Local IDs are uint32 (and local + 1 must fit in a slot): a run this full spills.
  static constexpr uint64_t kMaxRunIds = std::numeric_limits<uint32_t>::max() - 1;

  // True when two more IDs would take the table's load above 3/4.
  bool NeedsGrowth() const { return (uint64_t{distinct_} + 2) * 4 > uint64_t{table_.size()} * 3; }

  static std::string_view EntryView(const char* entry) {
    uint32_t len = 0;
    std::memcpy(&len, entry, sizeof(len));
    return {entry + sizeof(len), len};
  }

  // Bytes the run would hold after adding an edge whose IDs have `raw_bytes`, if both are new: the
  // arena (and a new block), the edges (and a new block), and the larger of the table (twice the
  // size while the old one still exists, when it grows) and the scratch of a spill (Raws and
  // SortedLocals, 32 bytes per ID), which is allocated after the table is freed.
  uint64_t ProjectedBytes(size_t raw_bytes) const {
    uint64_t table = table_.size() * sizeof(Slot);
    if (NeedsGrowth()) table *= 3;
    const uint64_t scratch = (uint64_t{distinct_} + 2) * 32;
    uint64_t arena = arena_bytes_;
    const size_t entry_bytes = raw_bytes + 2 * sizeof(uint32_t);
    if (arena_.empty() || arena_used_ + entry_bytes > arena_.back().size()) {
      arena += std::max<uint64_t>(arena_block_bytes_, entry_bytes);
    }
    return arena + edges_.bytes() + edges_.next_push_bytes() + std::max(table, scratch);
  }

  uint32_t Intern(std::string_view raw, uint64_t h) {
    const auto tag = static_cast<uint32_t>(h >> 32);
    const size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = table_[i];
      if (slot.local_plus_1 == 0) {
        slot = Slot{tag, distinct_ + 1, Store(raw)};
        return distinct_++;
      }
      if (slot.tag == tag && EntryView(slot.entry) == raw) return slot.local_plus_1 - 1;
    }
  }

  // Appends an arena entry (length, bytes) in local-ID order.
  const char* Store(std::string_view raw) {
    const size_t entry_bytes = sizeof(uint32_t) + raw.size();
    if (arena_.empty() || arena_used_ + entry_bytes > arena_.back().size()) {
      if (!arena_.empty()) arena_block_used_.push_back(arena_used_);
      const uint64_t block = std::max<uint64_t>(arena_block_bytes_, entry_bytes);
      arena_.emplace_back(block);
      arena_bytes_ += block;
      arena_used_ = 0;
    }
    char* entry = arena_.back().data() + arena_used_;
    const auto len = static_cast<uint32_t>(raw.size());
    std::memcpy(entry, &len, sizeof(len));
    if (!raw.empty()) std::memcpy(entry + sizeof(len), raw.data(), raw.size());
    arena_used_ += entry_bytes;
    return entry;
  }

  void Rehash(size_t slots) {
    std::vector<Slot> table(slots);
    const size_t mask = slots - 1;
    for (const Slot& old : table_) {
      if (old.local_plus_1 == 0) continue;
      size_t i = HashRaw(EntryView(old.entry)) & mask;
      while (table[i].local_plus_1 != 0) i = (i + 1) & mask;
      table[i] = old;
    }
    table_ = std::move(table);
  }

  const uint64_t budget_;
  const uint64_t arena_block_bytes_;
  std::vector<std::vector<char>> arena_;
  std::vector<size_t> arena_block_used_;  // bytes used in each arena block but the last
  uint64_t arena_bytes_ = 0;
  size_t arena_used_ = 0;  // in arena_.back()
  uint32_t distinct_ = 0;
  std::vector<Slot> table_;
  BlockArray<LocalEdge> edges_;
};

// A run on disk and, after the merge, which of its local IDs were first seen in it.
struct IdMapBuilder::SpilledRun {
  std::string l_path, a_path, b_path, m_path;
  uint32_t distinct = 0;
  uint64_t edges = 0;
  std::vector<uint64_t> first_seen;  // bit l: local ID l is first seen in this run
  std::vector<uint32_t> rank;        // first-seen bits in the words before each word
  int64_t dense_begin = 0;           // dense ID of this run's first first-seen local ID
};

// --- Builder ------------------------------------------------------------------------------------

IdMapBuilder::IdMapBuilder(const IdMapBuilderOptions& options)
    : options_(options),
      run_(std::make_unique<Run>(options.memory_bytes)),
      spill_dir_(std::make_unique<SpillDir>(options.spill_parent_dir, "idmap")),
      interner_(std::make_unique<Interner>(this)) {}

IdMapBuilder::~IdMapBuilder() = default;

Result<std::unique_ptr<IdMapBuilder>> IdMapBuilder::Create(const IdMapBuilderOptions& options) {
  return std::unique_ptr<IdMapBuilder>(new IdMapBuilder(options));
}

// Edges waiting to be interned: their raw IDs copied into one string, with their hashes (computed
// by the reading thread, while the bytes are in its cache).
struct IdMapBuilder::Batch {
  struct Entry {
    size_t offset = 0;  // in bytes: the source's bytes, then the target's
    uint32_t src_len = 0, dst_len = 0;
    uint64_t src_hash = 0, dst_hash = 0;
  };
  std::vector<Entry> entries;
  std::string bytes;

  void Append(std::string_view src, std::string_view dst) {
    entries.push_back(Entry{bytes.size(), static_cast<uint32_t>(src.size()),
                            static_cast<uint32_t>(dst.size()), HashRaw(src), HashRaw(dst)});
    bytes.append(src);
    bytes.append(dst);
  }
  HashedEdge Edge(size_t i) const {
    const Entry& e = entries[i];
    const std::string_view all(bytes);
    return HashedEdge{all.substr(e.offset, e.src_len), all.substr(e.offset + e.src_len, e.dst_len),
                      e.src_hash, e.dst_hash};
  }
  void Clear() {
    entries.clear();
    bytes.clear();
    if (bytes.capacity() > (4 << 20)) bytes.shrink_to_fit();  // after a very long ID
  }
};

// The interning thread: takes full batches from a queue of kQueueBatches and adds them to the
// runs (spilling them as they fill), while the caller's thread reads and parses the next lines.
class IdMapBuilder::Interner {
 public:
  explicit Interner(IdMapBuilder* builder) : builder_(builder), thread_([this] { Loop(); }) {}
  // Abandons the queued batches (the build failed or was not finished) and stops the thread.
  ~Interner() {
    {
      MutexLock lock(&mu_);
      queue_.clear();
    }
    (void)Close();
  }
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // An empty batch to fill (a recycled one when there is one).
  std::unique_ptr<Batch> TakeEmpty() {
    MutexLock lock(&mu_);
    if (empty_.empty()) return std::make_unique<Batch>();
    std::unique_ptr<Batch> b = std::move(empty_.back());
    empty_.pop_back();
    return b;
  }
  // Queues `batch`, waiting while kQueueBatches are queued. The interner's first error, if any.
  Status Push(std::unique_ptr<Batch> batch) {
    MutexLock lock(&mu_);
    while (queue_.size() >= kQueueBatches && error_.ok()) cv_.Wait(&mu_);
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(batch));
    cv_.SignalAll();
    return Status::Ok();
  }
  // Waits until every queued batch is interned, stops the thread; the first error, if any.
  Status Close() {
    {
      MutexLock lock(&mu_);
      closing_ = true;
    }
    cv_.SignalAll();
    if (thread_.joinable()) thread_.join();
    MutexLock lock(&mu_);
    return error_;
  }

 private:
  void Loop() {
    for (;;) {
      std::unique_ptr<Batch> batch;
      bool failed = false;
      {
        MutexLock lock(&mu_);
        while (queue_.empty() && !closing_) cv_.Wait(&mu_);
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        failed = !error_.ok();
      }
      cv_.SignalAll();
      const Status st = failed ? Status::Ok() : builder_->InternBatch(*batch);
      batch->Clear();
      MutexLock lock(&mu_);
      if (!st.ok() && error_.ok()) error_ = st;
      empty_.push_back(std::move(batch));
      cv_.SignalAll();
    }
  }

  IdMapBuilder* const builder_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::unique_ptr<Batch>> queue_ SKIFF_GUARDED_BY(mu_);  // at most kQueueBatches
  std::vector<std::unique_ptr<Batch>> empty_ SKIFF_GUARDED_BY(mu_);
  bool closing_ SKIFF_GUARDED_BY(mu_) = false;
  Status error_ SKIFF_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the members above exist
};

Status IdMapBuilder::Add(std::string_view src, std::string_view dst) {
  SKIFF_CHECK(!finished_);
  if (!pending_) pending_ = interner_->TakeEmpty();
  pending_->Append(src, dst);
  if (pending_->entries.size() == kBatchEdges) return interner_->Push(std::move(pending_));
  return Status::Ok();
}

// On the interning thread. Adds a batch kPrefetchEdges edges at a time, prefetching what their
// probes will touch first: the table and arena of a large run are far bigger than the caches, and
// one edge at a time waits for each miss in turn.
Status IdMapBuilder::InternBatch(const Batch& batch) {
  const size_t total = batch.entries.size();
  for (size_t begin = 0; begin < total; begin += kPrefetchEdges) {
    HashedEdge edges[kPrefetchEdges];
    const size_t n = std::min(kPrefetchEdges, total - begin);
    for (size_t i = 0; i < n; ++i) edges[i] = batch.Edge(begin + i);
    run_->Prefetch(edges, n);
    for (size_t i = 0; i < n; ++i) {
      if (!run_->TryAdd(edges[i])) {
        SKIFF_RETURN_IF_ERROR(SpillRun());
        SKIFF_CHECK(run_->TryAdd(edges[i]));
      }
    }
    stats_.edges += n;
  }
  return Status::Ok();
}

Status IdMapBuilder::SpillRun() {
  if (spilled_.size() == kMaxRuns) {
    return Status::ResourceExhausted(
        "mapping node IDs needs more than " + std::to_string(kMaxRuns) + " sorted runs at a " +
        "budget of " + std::to_string(options_.memory_bytes >> 20) + " MiB: raise --memory");
  }
  Run& run = *run_;
  run.ReleaseTable();
  SpilledRun out;
  const std::string prefix = "run-" + std::to_string(spilled_.size());
  SKIFF_ASSIGN_OR_RETURN(out.l_path, spill_dir_->Path(prefix + ".ids"));
  SKIFF_ASSIGN_OR_RETURN(out.a_path, spill_dir_->Path(prefix + ".sorted"));
  SKIFF_ASSIGN_OR_RETURN(out.b_path, spill_dir_->Path(prefix + ".edges"));
  SKIFF_ASSIGN_OR_RETURN(out.m_path, spill_dir_->Path(prefix + ".first"));
  out.distinct = run.distinct();
  out.edges = run.edge_count();
  constexpr size_t kBuffer = 1 << 20;
  SpillWriter l, a, b;
  const std::vector<std::string_view> raws = run.Raws();
  SKIFF_RETURN_IF_ERROR(l.Open(out.l_path, kBuffer));
  for (const std::string_view raw : raws) SKIFF_RETURN_IF_ERROR(AppendId(l, raw));
  SKIFF_RETURN_IF_ERROR(l.Close());
  SKIFF_RETURN_IF_ERROR(a.Open(out.a_path, kBuffer));
  for (const Run::SortKey& key : Run::SortedLocals(raws)) {
    const std::string_view raw = raws[key.local];
    const uint32_t header[2] = {static_cast<uint32_t>(raw.size()), key.local};
    SKIFF_RETURN_IF_ERROR(a.Append(header, sizeof(header)));
    SKIFF_RETURN_IF_ERROR(a.Append(raw.data(), raw.size()));
  }
  SKIFF_RETURN_IF_ERROR(a.Close());
  SKIFF_RETURN_IF_ERROR(b.Open(out.b_path, kBuffer));
  for (size_t i = 0; i < out.edges; ++i) SKIFF_RETURN_IF_ERROR(b.AppendValue(run.edge(i)));
  SKIFF_RETURN_IF_ERROR(b.Close());
  stats_.bytes_spilled += l.bytes_written() + a.bytes_written() + b.bytes_written();
  stats_.id_occurrences += out.distinct;
  ++stats_.runs_spilled;
  spilled_.push_back(std::move(out));
  run_ = std::make_unique<Run>(options_.memory_bytes);
  return Status::Ok();
}

Status IdMapBuilder::Finish(const std::string& map_dir) {
  SKIFF_CHECK(!finished_);
  finished_ = true;
  Status st = pending_ ? interner_->Push(std::move(pending_)) : Status::Ok();
  const Status closed = interner_->Close();
  SKIFF_RETURN_IF_ERROR(st);
  SKIFF_RETURN_IF_ERROR(closed);
  // The interning thread's malloc arena holds the freed blocks of earlier runs: give them back
  // before the merge and the edge sorter take the budget.
  ::malloc_trim(0);
  if (spilled_.empty()) return FinishInMemory(map_dir);
  return FinishSpilled(map_dir);
}

// --- Everything in one run ----------------------------------------------------------------------

namespace {

// Dense-integer check over distinct raw IDs: Note() each, then dense() says whether they are the
// integers [0, max] in canonical form (ParseCanonicalId: "07" is not the integer 7 but an ID of
// its own, so it makes the IDs not dense, and distinct raw IDs have distinct values).
class DenseIntegerCheck {
 public:
  explicit DenseIntegerCheck(bool enabled, int64_t limit) : possible_(enabled), limit_(limit) {}
  bool possible() const { return possible_; }
  void Note(std::string_view raw, int64_t* value_out = nullptr) {
    if (!possible_) return;
    int64_t v = 0;
    if (!ParseCanonicalId(raw, &v) || v >= limit_) {
      possible_ = false;
      seen_.clear();
      seen_.shrink_to_fit();
      return;
    }
    const auto word = static_cast<size_t>(v >> 6);
    if (word >= seen_.size()) seen_.resize(std::max(word + 1, seen_.size() * 2));
    seen_[word] |= uint64_t{1} << (v & 63);
    max_ = std::max(max_, v);
    if (value_out) *value_out = v;
  }
  // True if every noted ID was an integer and the values cover [0, max].
  bool dense() const {
    if (!possible_ || max_ < 0) return false;
    uint64_t distinct = 0;
    for (const uint64_t w : seen_) distinct += static_cast<uint64_t>(std::popcount(w));
    return distinct == static_cast<uint64_t>(max_ + 1);
  }
  int64_t max() const { return max_; }

 private:
  bool possible_;
  const int64_t limit_;
  std::vector<uint64_t> seen_;
  int64_t max_ = -1;
};

}  // namespace

Status IdMapBuilder::FinishInMemory(const std::string& map_dir) {
  Run& run = *run_;
  run.ReleaseTable();
  stats_.id_occurrences = run.distinct();
  DenseIntegerCheck check(options_.detect_dense_integers, options_.max_identity_id);
  const std::vector<std::string_view> raws = run.Raws();
  std::vector<int64_t> values;
  if (check.possible()) {
    values.resize(run.distinct());
    for (uint32_t l = 0; l < run.distinct() && check.possible(); ++l) {
      check.Note(raws[l], &values[l]);
    }
  }
  if (check.dense()) {
    identity_ = true;
    num_nodes_ = check.max() + 1;
    in_memory_dense_ = std::move(values);
    run.ReleaseIds();
    return Status::Ok();
  }
  num_nodes_ = run.distinct();
  SKIFF_ASSIGN_OR_RETURN(const std::string scratch, spill_dir_->Path("."));
  SKIFF_ASSIGN_OR_RETURN(auto load, IdMapBulkLoad::Create(map_dir, scratch));
  Progress progress("write ID map", 2 * static_cast<uint64_t>(num_nodes_), "IDs");
  for (const std::string_view raw : raws) SKIFF_RETURN_IF_ERROR(load->AddDense(raw));
  progress.Set(static_cast<uint64_t>(num_nodes_));
  for (const Run::SortKey& key : Run::SortedLocals(raws)) {
    SKIFF_RETURN_IF_ERROR(load->AddRaw(raws[key.local], key.local));
  }
  SKIFF_RETURN_IF_ERROR(load->Finish());
  progress.Finish();
  run.ReleaseIds();
  return Status::Ok();
}

uint64_t IdMapBuilder::replay_bytes() const {
  if (spilled_.empty()) return run_ ? run_->edge_bytes() + in_memory_dense_.size() * 8 : 0;
  uint32_t largest = 0;
  for (const SpilledRun& r : spilled_) largest = std::max(largest, r.distinct);
  return uint64_t{largest} * 8 + (2 << 20);
}

Status IdMapBuilder::Replay(const std::function<Status(int64_t, int64_t)>& sink) {
  SKIFF_CHECK(finished_);
  if (!spilled_.empty()) return ReplaySpilled(sink);
  Progress progress("map edges", run_->edge_count(), "edges");
  for (size_t i = 0; i < run_->edge_count(); ++i) {
    const LocalEdge e = run_->edge(i);
    if (identity_) {
      SKIFF_RETURN_IF_ERROR(sink(in_memory_dense_[e.src], in_memory_dense_[e.dst]));
    } else {
      SKIFF_RETURN_IF_ERROR(sink(e.src, e.dst));
    }
    if ((i & 0xffff) == 0) progress.Set(i);
  }
  progress.Finish();
  run_.reset();
  in_memory_dense_ = {};
  return Status::Ok();
}

// --- Several runs: merge, map, replay -----------------------------------------------------------

// Reads an A file: (length, local ID, bytes) records in byte order of the raw IDs.
class IdMapBuilder::Merge {
 public:
  struct Head {
    std::string_view raw;
    uint32_t local = 0;
  };

  Status Open(const std::vector<SpilledRun>& runs, size_t buffer_bytes) {
    readers_.resize(runs.size());
    heads_.resize(runs.size());
    remaining_.resize(runs.size());
    for (uint32_t r = 0; r < runs.size(); ++r) {
      readers_[r] = std::make_unique<SpillReader>();
      SKIFF_RETURN_IF_ERROR(readers_[r]->Open(runs[r].a_path, buffer_bytes));
      remaining_[r] = runs[r].distinct;
      SKIFF_RETURN_IF_ERROR(Advance(r));
    }
    return Status::Ok();
  }
  bool empty() const { return heap_.empty(); }
  uint32_t top_run() const { return heap_.top(); }
  const Head& head(uint32_t run) const { return heads_[run]; }
  // Pops the smallest head and reads that run's next record. The popped head's raw view stays
  // valid only until then: callers copy it first.
  Status Pop() {
    const uint32_t r = heap_.top();
    heap_.pop();
    return Advance(r);
  }

 private:
  Status Advance(uint32_t r) {
    if (remaining_[r] == 0) return Status::Ok();
    --remaining_[r];
    uint32_t header[2];
    SKIFF_RETURN_IF_ERROR(readers_[r]->ReadValue(&header));
    heads_[r].local = header[1];
    SKIFF_RETURN_IF_ERROR(readers_[r]->Read(header[0], &heads_[r].raw));
    heap_.push(r);
    return Status::Ok();
  }

  struct Greater {
    const Merge* m;
    bool operator()(uint32_t a, uint32_t b) const {
      const int c = m->heads_[a].raw.compare(m->heads_[b].raw);
      return c > 0 || (c == 0 && a > b);
    }
  };
  std::vector<std::unique_ptr<SpillReader>> readers_;
  std::vector<Head> heads_;
  std::vector<uint32_t> remaining_;
  std::priority_queue<uint32_t, std::vector<uint32_t>, Greater> heap_{Greater{this}};
};

Status IdMapBuilder::FinishSpilled(const std::string& map_dir) {
  if (!run_->empty()) SKIFF_RETURN_IF_ERROR(SpillRun());
  run_.reset();
  SKIFF_RETURN_IF_ERROR(MergeRuns());
  if (identity_) return Status::Ok();
  return LoadMap(map_dir);
}

// Merges the A files: writes each run's M file and G, marks first sightings, and decides whether
// the IDs are dense integers.
Status IdMapBuilder::MergeRuns() {
  const size_t k = spilled_.size();
  const size_t buffer = std::clamp<uint64_t>(options_.memory_bytes / (2 * k + 1), 4096, 1 << 20);
  Merge merge;
  SKIFF_RETURN_IF_ERROR(merge.Open(spilled_, buffer));
  std::vector<SpillWriter> m(k);
  for (size_t r = 0; r < k; ++r) {
    SKIFF_RETURN_IF_ERROR(m[r].Open(spilled_[r].m_path, buffer));
    spilled_[r].first_seen.assign((uint64_t{spilled_[r].distinct} + 63) / 64, 0);
  }
  SpillWriter g;
  SKIFF_ASSIGN_OR_RETURN(merged_path_, spill_dir_->Path("merged.sorted"));
  SKIFF_RETURN_IF_ERROR(g.Open(merged_path_, buffer));
  DenseIntegerCheck check(options_.detect_dense_integers, options_.max_identity_id);
  Progress progress("merge ID runs", stats_.id_occurrences, "IDs");
  std::string raw;
  uint64_t merged = 0, distinct = 0;
  while (!merge.empty()) {
    const uint32_t first_run = merge.top_run();
    const uint32_t first_local = merge.head(first_run).local;
    raw.assign(merge.head(first_run).raw);
    spilled_[first_run].first_seen[first_local / 64] |= uint64_t{1} << (first_local % 64);
    check.Note(raw);
    const uint32_t g_header[3] = {static_cast<uint32_t>(raw.size()), first_run, first_local};
    SKIFF_RETURN_IF_ERROR(g.Append(g_header, sizeof(g_header)));
    SKIFF_RETURN_IF_ERROR(g.Append(raw.data(), raw.size()));
    // Every run holding this raw ID, earliest first (ties in the heap go to the lower run).
    while (!merge.empty() && merge.head(merge.top_run()).raw == raw) {
      const uint32_t r = merge.top_run();
      const FirstSeen entry{merge.head(r).local, first_run, first_local};
      SKIFF_RETURN_IF_ERROR(m[r].AppendValue(entry));
      SKIFF_RETURN_IF_ERROR(merge.Pop());
      ++merged;
    }
    ++distinct;
    if ((distinct & 0xffff) == 0) progress.Set(merged);
  }
  progress.Finish();
  for (SpillWriter& w : m) {
    SKIFF_RETURN_IF_ERROR(w.Close());
    stats_.bytes_spilled += w.bytes_written();
  }
  SKIFF_RETURN_IF_ERROR(g.Close());
  stats_.bytes_spilled += g.bytes_written();
  int64_t next = 0;
  for (SpilledRun& r : spilled_) {
    r.dense_begin = next;
    r.rank.resize(r.first_seen.size());
    uint32_t count = 0;
    for (size_t w = 0; w < r.first_seen.size(); ++w) {
      r.rank[w] = count;
      count += static_cast<uint32_t>(std::popcount(r.first_seen[w]));
    }
    next += count;
  }
  SKIFF_CHECK(static_cast<uint64_t>(next) == distinct);
  identity_ = check.dense();
  num_nodes_ = identity_ ? check.max() + 1 : next;
  return Status::Ok();
}

int64_t IdMapBuilder::DenseOf(uint32_t run, uint32_t local) const {
  const SpilledRun& r = spilled_[run];
  const uint64_t word = r.first_seen[local / 64];
  const uint64_t below = word & ((uint64_t{1} << (local % 64)) - 1);
  return r.dense_begin + r.rank[local / 64] + std::popcount(below);
}

// Bulk-loads the RocksDB map: dense -> raw from the L files (each run's first-seen IDs, runs in
// order, are the dense IDs in order), raw -> dense from G.
Status IdMapBuilder::LoadMap(const std::string& map_dir) {
  SKIFF_ASSIGN_OR_RETURN(const std::string scratch, spill_dir_->Path("."));
  SKIFF_ASSIGN_OR_RETURN(auto load, IdMapBulkLoad::Create(map_dir, scratch));
  Progress progress("write ID map", 2 * static_cast<uint64_t>(num_nodes_), "IDs");
  constexpr size_t kBuffer = 1 << 20;
  for (const SpilledRun& r : spilled_) {
    SpillReader l;
    SKIFF_RETURN_IF_ERROR(l.Open(r.l_path, kBuffer));
    for (uint32_t local = 0; local < r.distinct; ++local) {
      std::string_view raw;
      SKIFF_RETURN_IF_ERROR(ReadId(l, &raw));
      if ((r.first_seen[local / 64] >> (local % 64)) & 1) {
        SKIFF_RETURN_IF_ERROR(load->AddDense(raw));
      }
    }
    progress.Set(static_cast<uint64_t>(load->dense_count()));
  }
  SpillReader g;
  SKIFF_RETURN_IF_ERROR(g.Open(merged_path_, kBuffer));
  for (int64_t i = 0; i < num_nodes_; ++i) {
    uint32_t header[3];
    std::string_view raw;
    SKIFF_RETURN_IF_ERROR(g.ReadValue(&header));
    SKIFF_RETURN_IF_ERROR(g.Read(header[0], &raw));
    SKIFF_RETURN_IF_ERROR(load->AddRaw(raw, DenseOf(header[1], header[2])));
    if ((i & 0xffff) == 0) progress.Set(static_cast<uint64_t>(num_nodes_ + i));
  }
  SKIFF_RETURN_IF_ERROR(load->Finish());
  progress.Finish();
  return Status::Ok();
}

// Per run: its local -> dense table (from M, or from its raw IDs' values when they are dense
// integers), then its edges from B.
Status IdMapBuilder::ReplaySpilled(const std::function<Status(int64_t, int64_t)>& sink) {
  Progress progress("map edges", stats_.edges, "edges");
  constexpr size_t kBuffer = 1 << 20;
  uint64_t done = 0;
  for (const SpilledRun& r : spilled_) {
    std::vector<int64_t> dense(r.distinct);
    SpillReader in;
    SKIFF_RETURN_IF_ERROR(in.Open(identity_ ? r.l_path : r.m_path, kBuffer));
    for (uint32_t i = 0; i < r.distinct; ++i) {
      if (identity_) {
        std::string_view raw;
        SKIFF_RETURN_IF_ERROR(ReadId(in, &raw));
        SKIFF_CHECK(ParseInt64(raw, &dense[i]));
      } else {
        FirstSeen entry;
        SKIFF_RETURN_IF_ERROR(in.ReadValue(&entry));
        if (entry.local >= r.distinct || entry.first_run >= spilled_.size()) {
          return Status::Corruption("spill file " + r.m_path + ": entry out of range");
        }
        dense[entry.local] = DenseOf(entry.first_run, entry.first_local);
      }
    }
    SpillReader b;
    SKIFF_RETURN_IF_ERROR(b.Open(r.b_path, kBuffer));
    // Edges in chunks whose table entries are prefetched first: the table is far bigger than the
    // caches and the local IDs are random.
    constexpr uint64_t kChunk = 64;
    for (uint64_t i = 0; i < r.edges; i += kChunk) {
      const uint64_t n = std::min(kChunk, r.edges - i);
      std::string_view bytes;
      SKIFF_RETURN_IF_ERROR(b.Read(n * sizeof(LocalEdge), &bytes));
      LocalEdge chunk[kChunk];
      std::memcpy(chunk, bytes.data(), bytes.size());
      for (uint64_t j = 0; j < n; ++j) {
        if (chunk[j].src >= r.distinct || chunk[j].dst >= r.distinct) {
          return Status::Corruption("spill file " + r.b_path + ": local ID out of range");
        }
        PrefetchRead(&dense[chunk[j].src]);
        PrefetchRead(&dense[chunk[j].dst]);
      }
      for (uint64_t j = 0; j < n; ++j) {
        SKIFF_RETURN_IF_ERROR(sink(dense[chunk[j].src], dense[chunk[j].dst]));
      }
      done += n;
      if ((i & 0xffff) == 0) progress.Set(done);
    }
  }
  progress.Finish();
  return Status::Ok();
}

}  // namespace skiff::convert
