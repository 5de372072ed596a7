#include "skiff/pipeline/epoch_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "skiff/log.h"
#include "skiff/mutex.h"
#include "skiff/pipeline/bounded_queue.h"
#include "skiff/pipeline/pipeline.h"
#include "skiff/pipeline/resident_graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/units.h"

namespace skiff::pipeline {
namespace {

// Batches [index, index + seeds.size()) to sample together, all of gather group
// [group_first, group_first + group_size).
struct WorkItem {
  int64_t index = 0;
  int64_t group_first = 0;
  int group_size = 1;
  uint64_t reserved = 0;  // bytes the admission window holds for each batch
  std::vector<std::span<const int64_t>> seeds;
  std::vector<int64_t> next_seeds;  // of the batches after these (lists read ahead)
  std::shared_ptr<const ResidentSet> resident;
};

struct SampledItem {
  int64_t group_first = 0;
  int group_size = 1;
  PreparedBatch prepared;
  std::shared_ptr<const ResidentSet> resident;
  // Aggregated: the group's aggregation schedule, shared by its batches; the first batch counts
  // its bytes until the group is gathered.
  std::shared_ptr<const AggregationPlan> aggregation_plan;
};

// Admits batches [index, index + count) into the pipeline (a gather group, together) only when
// fewer than `window` batches before the last are still unfinished (Regroup may change it; a group
// larger than the window waits for every batch before it) -- or, counting `whole_groups`
// (aggregated gathering: two groups in flight, the one gathered and computed and the next one
// sampled), only once every group before the last one admitted is computed -- and the bytes held
// by the batches in flight leave room for `count` more of the expected size (`allowance` 0: no
// byte limit), so the batches alive at once are bounded in count and in memory even though stages
// run in parallel and the compute stage reorders. A batch is always
// admitted when none is in flight, so a batch larger than expected slows the pipeline but never
// stops it. Each batch's reservation starts at `expected` and is corrected to its actual size once
// it is sampled (Resize). The plan's `expected` is a worst-case-leaning estimate; when it says how
// much of it a sampled batch holds (`expected_held` > 0), the batches sampled so far (Observe)
// scale it down: a new batch reserves expected x (the largest held so far x 5/4 / expected_held),
// at most `expected` -- so the batches in flight are as many as their actual size allows.
class InFlightWindow {
 public:
  InFlightWindow(int64_t window, bool whole_groups, uint64_t allowance, uint64_t expected,
                 uint64_t expected_held, bool admit_past_consumer)
      : window_(window),
        whole_groups_(whole_groups),
        admit_past_consumer_(admit_past_consumer),
        expected_(expected),
        allowance_(allowance),
        expected_held_(expected_held),
        estimate_(expected) {}
  // A batch was sampled and holds `held` bytes.
  void Observe(uint64_t held) {
    if (expected_held_ == 0) return;
    MutexLock lock(&mu_);
    largest_held_ = std::max(largest_held_, held);
    Rescale();
    cv_.SignalAll();
  }
  // New groups: at most `window` batches unfinished, and a batch not yet sampled counts `expected`
  // bytes (scaled as in Observe).
  void Regroup(int64_t window, uint64_t expected) {
    MutexLock lock(&mu_);
    window_ = window;
    expected_ = expected;
    Rescale();
    cv_.SignalAll();
  }
  // Returns the bytes reserved for each batch, or nullopt when cancelled. When the batches do not
  // fit yet -- with whole groups, for any reason; otherwise when the allowance is short of bytes
  // for them -- `reclaim` (when given) is called, without the lock, to release spare memory
  // counted here; admission_waiting() is true until they are admitted.
  std::optional<uint64_t> Admit(int64_t index, int64_t count, StageTimer* timer,
                                const std::function<void()>& reclaim = nullptr) {
    MutexLock lock(&mu_);
    if (!Admissible(index, count)) {
      StallScope stall(timer);
      ++admissions_waiting_;
      if (reclaim && (whole_groups_ || ShortOfBytes(count))) {
        lock.Unlock();
        reclaim();
        lock.Lock();
      }
      while (!Admissible(index, count)) cv_.Wait(&mu_);
      --admissions_waiting_;
    }
    if (cancelled_) return std::nullopt;
    last_group_first_ = index;
    in_flight_ += count;
    Add(static_cast<uint64_t>(count) * estimate_);
    return estimate_;
  }
  // An aggregated batch was sampled whose features, `bytes`, its group will reserve when gathered:
  // admissions count them from now on, so that the next group, admitted while this one waits for
  // its gather, leaves room for them.
  void Pending(uint64_t bytes) {
    MutexLock lock(&mu_);
    pending_ += bytes;
  }
  // Adds `bytes` for the features of `count` batches about to be gathered (aggregated groups; their
  // Pending bytes), waiting until they fit in the allowance or no other gathered batch is in
  // flight. False when cancelled.
  bool Reserve(uint64_t bytes, int64_t count, StageTimer* timer) {
    MutexLock lock(&mu_);
    if (!Fits(bytes)) {
      StallScope stall(timer);
      while (!Fits(bytes)) cv_.Wait(&mu_);
    }
    if (cancelled_) return false;
    pending_ -= std::min(pending_, bytes);
    gathered_ += count;
    Add(bytes);
    return true;
  }
  // Corrects a batch's reservation from `from` to `to` bytes.
  void Resize(uint64_t from, uint64_t to) {
    MutexLock lock(&mu_);
    bytes_ -= std::min(bytes_, from);
    Add(to);
    if (to < from) cv_.SignalAll();
  }
  // Adds `bytes` held until the pass ends, once every batch admitted has its features reserved
  // (so that they never delay a group's read) and they fit in the allowance, or nothing is in
  // flight. False when cancelled.
  bool Hold(uint64_t bytes, StageTimer* timer) {
    MutexLock lock(&mu_);
    auto fits = [&]() SKIFF_REQUIRES(mu_) {
      return cancelled_ || in_flight_ == 0 ||
             (gathered_ == in_flight_ &&
              (allowance_ == 0 || bytes_ + pending_ + bytes <= allowance_));
    };
    if (!fits()) {
      StallScope stall(timer);
      while (!fits()) cv_.Wait(&mu_);
    }
    if (cancelled_) return false;
    Add(bytes);
    return true;
  }
  // A batch was handed to the consumer (it stays in flight until Done).
  void Delivered() {
    MutexLock lock(&mu_);
    ++delivered_;
    cv_.SignalAll();
  }
  // The consumer waits for a batch (true) or has stopped waiting (false).
  void ConsumerWaiting(bool waiting) {
    MutexLock lock(&mu_);
    consumer_waiting_ = waiting;
    if (waiting) cv_.SignalAll();
  }
  // A batch was computed (released by the consumer); `gathered`: its features were reserved with
  // Reserve.
  void Done(uint64_t bytes, bool gathered) {
    MutexLock lock(&mu_);
    ++done_;
    --in_flight_;
    if (gathered) --gathered_;
    bytes_ -= std::min(bytes_, bytes);
    cv_.SignalAll();
  }
  void Cancel() {
    MutexLock lock(&mu_);
    cancelled_ = true;
    cv_.SignalAll();
  }
  bool admission_waiting() const {
    MutexLock lock(&mu_);
    return admissions_waiting_ > 0;
  }
  // An admission waits because the allowance is short of bytes for one more batch.
  bool admission_short_of_bytes() const {
    MutexLock lock(&mu_);
    return admissions_waiting_ > 0 && ShortOfBytes(1);
  }
  uint64_t peak_bytes() const {
    MutexLock lock(&mu_);
    return peak_bytes_;
  }
  int64_t peak_in_flight() const {
    MutexLock lock(&mu_);
    return peak_in_flight_;
  }

 private:
  bool Admissible(int64_t index, int64_t count) const SKIFF_REQUIRES(mu_) {
    // A group larger than the window (it shrank after the group was cut) waits for every batch
    // before it instead. Counted in batches, a group after a larger one waited for part of the
    // group before it too: at 25% of the 2M-node benchmark the evaluation's third group (18
    // batches, after one of 20) waited out the whole read of the second (0.4 s of idle disk).
    const bool counted = whole_groups_ ? done_ >= last_group_first_
                                       : index + count - 1 < done_ + std::max(window_, count);
    // The consumer waits for a batch while every batch in flight is with it
    // (EpochRunnerOptions::admit_past_consumer): nothing else would ever be admitted.
    if (admit_past_consumer_ && consumer_waiting_ && delivered_ - done_ == in_flight_) {
      return true;
    }
    return cancelled_ ||
           (counted &&
            (allowance_ == 0 || in_flight_ == 0 ||
             bytes_ + pending_ + static_cast<uint64_t>(count) * estimate_ <= allowance_));
  }
  bool ShortOfBytes(int64_t count) const SKIFF_REQUIRES(mu_) {
    return allowance_ > 0 &&
           bytes_ + pending_ + static_cast<uint64_t>(count) * estimate_ > allowance_;
  }
  bool Fits(uint64_t bytes) const SKIFF_REQUIRES(mu_) {
    return cancelled_ || allowance_ == 0 || gathered_ == 0 || bytes_ + bytes <= allowance_;
  }
  // estimate_ from expected_ and the batches observed.
  void Rescale() SKIFF_REQUIRES(mu_) {
    if (expected_held_ == 0 || largest_held_ == 0) {
      estimate_ = expected_;
      return;
    }
    const double scale =
        static_cast<double>(largest_held_) * 1.25 / static_cast<double>(expected_held_);
    estimate_ =
        std::min(expected_, static_cast<uint64_t>(static_cast<double>(expected_) * scale) + 1);
  }
  void Add(uint64_t bytes) SKIFF_REQUIRES(mu_) {
    bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, bytes_);
    peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
  }
  mutable Mutex mu_;
  int64_t window_ SKIFF_GUARDED_BY(mu_);
  const bool whole_groups_;
  const bool admit_past_consumer_;
  int64_t last_group_first_ SKIFF_GUARDED_BY(mu_) = 0;  // whole_groups_: the last group admitted
  uint64_t expected_ SKIFF_GUARDED_BY(mu_);
  const uint64_t allowance_, expected_held_;
  uint64_t estimate_ SKIFF_GUARDED_BY(mu_);          // what a new batch reserves
  uint64_t largest_held_ SKIFF_GUARDED_BY(mu_) = 0;  // the largest sampled batch so far
  CondVar cv_;
  int64_t done_ SKIFF_GUARDED_BY(mu_) = 0;       // batches computed (released)
  int64_t delivered_ SKIFF_GUARDED_BY(mu_) = 0;  // batches handed to the consumer
  bool consumer_waiting_ SKIFF_GUARDED_BY(mu_) = false;
  int64_t in_flight_ SKIFF_GUARDED_BY(mu_) = 0;  // admitted and not yet computed
  int64_t gathered_ SKIFF_GUARDED_BY(mu_) = 0;   // of which holding Reserve'd features
  uint64_t bytes_ SKIFF_GUARDED_BY(mu_) = 0;     // reserved by the batches in flight
  uint64_t pending_ SKIFF_GUARDED_BY(mu_) = 0;   // features sampled groups will reserve
  uint64_t peak_bytes_ SKIFF_GUARDED_BY(mu_) = 0;
  int64_t peak_in_flight_ SKIFF_GUARDED_BY(mu_) = 0;
  bool cancelled_ SKIFF_GUARDED_BY(mu_) = false;
  int admissions_waiting_ SKIFF_GUARDED_BY(mu_) = 0;
};

// One feature staging buffer handed from the compute stage back to the gather stage, so that a
// batch reuses the previous batch's buffer instead of paying a fresh allocation's page faults and
// zero fill (tens of MB per batch). While it waits, the admission window counts its bytes.
class RecycledStaging {
 public:
  // Keeps `buffer` if none is kept yet; returns the bytes kept (they move from the batch's count
  // to this one's: the caller releases the batch's other bytes only).
  uint64_t Put(FloatBuffer* buffer) {
    if (buffer->capacity() == 0) return 0;
    MutexLock lock(&mu_);
    if (free_.capacity() > 0) return 0;  // keep one: the caller frees the rest
    free_.swap(*buffer);
    return free_.capacity() * 4;
  }
  void TakeInto(FloatBuffer* buffer, InFlightWindow* window) {
    MutexLock lock(&mu_);
    if (free_.capacity() == 0) return;
    window->Resize(free_.capacity() * 4, 0);
    buffer->swap(free_);
    FloatBuffer().swap(free_);
  }
  // Frees the kept buffer, if any (after the lock is released).
  void Drop(InFlightWindow* window) {
    FloatBuffer dropped;
    TakeInto(&dropped, window);
  }

 private:
  Mutex mu_;
  FloatBuffer free_ SKIFF_GUARDED_BY(mu_);
};

// How far the sample stage has sampled (aggregated groups, in order): the plan stage cuts a group
// only once every batch before it is sampled, so that each group is cut at the size the batches
// sampled so far allow (EpochRunnerOptions::regroup). Cut earlier, the group after the first kept
// the estimate's size: at 25% of the 2M-node benchmark the validation pass began 13, 13 where 16
// fit, one more read of the feature file. The one sampler thread takes a group at a time, so the
// wait costs no overlap.
class SampledThrough {
 public:
  void Advance(int64_t end) {
    MutexLock lock(&mu_);
    end_ = std::max(end_, end);
    cv_.SignalAll();
  }
  // Waits until batches [0, index) are sampled; false when cancelled.
  bool WaitFor(int64_t index, StageTimer* timer) {
    MutexLock lock(&mu_);
    if (end_ < index && !cancelled_) {
      StallScope stall(timer);
      while (end_ < index && !cancelled_) cv_.Wait(&mu_);
    }
    return !cancelled_;
  }
  void Cancel() {
    MutexLock lock(&mu_);
    cancelled_ = true;
    cv_.SignalAll();
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int64_t end_ SKIFF_GUARDED_BY(mu_) = 0;
  bool cancelled_ SKIFF_GUARDED_BY(mu_) = false;
};

// Bytes a sampled batch holds until it is computed: its MiniBatch and, unless `aggregated`, its
// float32 staging (`feature_dim` per input node, allocated by the gather stage). Aggregated batches
// reserve their features when gathered (AggregatedFeatureBytes).
uint64_t HeldBytes(const sampler::MiniBatch& b, int64_t feature_dim, bool aggregated) {
  uint64_t bytes = b.input_nodes.capacity() * 8 + b.seeds.capacity() * 8 + b.labels.capacity() * 4;
  for (const sampler::Block& block : b.blocks) {
    bytes += block.indptr.capacity() * 8 + block.indices.capacity() * 4 +
             block.src_degree.capacity() * 8;
  }
  if (aggregated) return bytes;
  return bytes + b.input_nodes.size() * static_cast<uint64_t>(feature_dim) * 4;
}

// An aggregated batch's features: two float32 rows per block-0 destination (its share of the
// group's AggregationPlan is counted from sampling on).
uint64_t AggregatedFeatureBytes(const sampler::MiniBatch& b, int64_t feature_dim) {
  return static_cast<uint64_t>(b.blocks.at(0).num_dst) * 2 * static_cast<uint64_t>(feature_dim) * 4;
}

}  // namespace

int EpochRunnerOptions::InFlightBatches() const {
  // Aggregated: exactly two groups, the one gathered and computed and the next one sampled (the
  // memory plan's allowance is that; a third group admitted early pushed the 10m preset at 1 GiB
  // 263 MiB over it).
  if (aggregation.has_value()) return 2 * std::max(gather_group, 1);
  return sample_threads + gather_threads + static_cast<int>(sampled_queue_capacity) +
         static_cast<int>(ready_queue_capacity) + 1;
}

uint64_t BatchSampleSeed(uint64_t seed, uint64_t stream, uint64_t epoch, int64_t index) {
  return sampler::BatchSeed(seed, stream, epoch, static_cast<uint64_t>(index));
}

PassParts::PassParts(std::vector<EpochRunnerOptions::Part> parts, int64_t batch_size,
                     uint64_t stream)
    : parts_(std::move(parts)) {
  SKIFF_CHECK(batch_size > 0);
  if (parts_.empty()) parts_.push_back({0, stream});
  int64_t first = 0;
  for (const EpochRunnerOptions::Part& part : parts_) {
    first_.push_back(first);
    first += (part.nodes + batch_size - 1) / batch_size;
  }
}

int PassParts::PartOf(int64_t index) const {
  return static_cast<int>(std::upper_bound(first_.begin(), first_.end(), index) - first_.begin() -
                          1);
}

uint64_t PassParts::SampleSeed(uint64_t seed, uint64_t epoch, int64_t index) const {
  const auto part = static_cast<size_t>(PartOf(index));
  return BatchSampleSeed(seed, parts_[part].stream, epoch,
                         parts_[part].first_batch + index - first_[part]);
}

std::vector<std::span<const int64_t>> CutBatches(std::span<const int64_t> nodes, int64_t batch_size,
                                                 std::span<const EpochRunnerOptions::Part> parts) {
  SKIFF_CHECK(batch_size > 0);
  const EpochRunnerOptions::Part whole{static_cast<int64_t>(nodes.size()), 0};
  if (parts.empty()) parts = std::span(&whole, 1);
  std::vector<std::span<const int64_t>> batches;
  size_t begin = 0;
  for (const EpochRunnerOptions::Part& part : parts) {
    const size_t end = begin + static_cast<size_t>(part.nodes);
    SKIFF_CHECK(end <= nodes.size());
    for (size_t first = begin; first < end; first += static_cast<size_t>(batch_size)) {
      batches.push_back(
          nodes.subspan(first, std::min(end - first, static_cast<size_t>(batch_size))));
    }
    begin = end;
  }
  SKIFF_CHECK(begin == nodes.size());
  return batches;
}

EpochRunner::EpochRunner(BufferedGraph* graph, EpochRunnerOptions options)
    : graph_(graph), options_(std::move(options)) {
  SKIFF_CHECK(options_.batch_size > 0);
  SKIFF_CHECK(options_.sample_threads >= 1 && options_.gather_threads >= 1);
  SKIFF_CHECK(options_.gather_group >= 1);
  // Groups are gathered in order by one thread (each needs the whole group sampled), and handed
  // to compute whole: the ready queue takes a group, so gathering the next overlaps computing it.
  if (options_.aggregation.has_value()) {
    options_.gather_threads = 1;
    options_.ready_queue_capacity =
        std::max(options_.ready_queue_capacity,
                 static_cast<size_t>(options_.regroup ? kMaxGatherGroup : options_.gather_group));
  }
}

SampleGroupFn OneByOne(SampleFn sample) {
  return [sample = std::move(sample)](const BatchGraph& graph,
                                      std::span<const std::span<const int64_t>> seeds,
                                      std::span<const uint64_t> sample_seeds,
                                      std::span<sampler::MiniBatch* const> batches) -> Status {
    for (size_t i = 0; i < seeds.size(); ++i) {
      SKIFF_RETURN_IF_ERROR(sample(graph, seeds[i], sample_seeds[i], batches[i]));
    }
    return Status::Ok();
  };
}

Result<EpochReport> EpochRunner::Run(const EpochPlan& plan, const SampleFn& sample,
                                     const ComputeFn& compute) {
  return Run(plan, OneByOne(sample), compute);
}

namespace {

using PinPtr = std::shared_ptr<const storage::PartitionPin>;

// One epoch through the pipeline: the queues between the stages, the admission window, and one
// method per stage (EpochRunner::Run wires them up).
//   io      pins the partitions in the plan's access order, one partition ahead of the plan stage
//           (the "loaded" queue), so the next partition loads while the current state trains;
//           waiting in Pin is waiting for the disk and counts as this stage's busy time.
//   plan    walks the buffer states, takes each admitted partition's pin, drops each evicted
//           one, and emits the state's batches (whole gather groups) with a shared ResidentSet.
//   sample  samples a work item (a batch, or an aggregated group as one).
//   gather  stages each batch's rows, or gathers each aggregated group in one pass.
// The consumer (PassStream) takes the batches from the "ready" queue in epoch order and releases
// each when done with it.
class EpochRun {
 public:
  EpochRun(BufferedGraph* graph, const EpochRunnerOptions& options, const EpochPlan& plan,
           const SampleGroupFn& sample)
      : graph_(graph),
        opt_(options),
        plan_(plan),
        sample_(sample),
        dim_(graph->feature_dim()),
        aggregate_(options.aggregation.has_value()),
        work_("work", options.work_queue_capacity),
        sampled_("sampled", options.sampled_queue_capacity),
        ready_("ready", options.ready_queue_capacity),
        loaded_("loaded", 1),
        window_(options.InFlightBatches(), options.aggregation.has_value(),
                options.batch_allowance_bytes, options.expected_batch_bytes,
                options.expected_held_bytes, options.admit_past_consumer),
        group_size_(std::max(options.gather_group, 1)),
        parts_(options.parts, options.batch_size, options.stream) {}

  // Adds the queues and stages to `pipeline` (which must outlive nothing of this run).
  void AddTo(Pipeline* pipeline);

  // The consumer's side: the gathered batches as they come (any order; nullopt once the gather
  // stage is done or the pipeline cancelled), and each batch handed over and released.
  std::optional<PreparedBatch> PopReady(StageTimer* timer) { return ready_.Pop(timer); }
  std::optional<PreparedBatch> PopReadyFor(std::chrono::nanoseconds timeout, bool* timed_out) {
    return ready_.PopFor(timeout, timed_out);
  }
  void Delivered() { window_.Delivered(); }
  void ConsumerWaiting(bool waiting) { window_.ConsumerWaiting(waiting); }
  void Account(PreparedBatch* batch, uint64_t bytes) {
    window_.Resize(batch->held_bytes, batch->held_bytes + bytes);
    batch->held_bytes += bytes;
  }
  void Release(PreparedBatch&& batch);

  int group_size() const { return group_size_.load(); }
  const InFlightWindow& window() const { return window_; }

 private:
  Status PinPartitions(StageContext& ctx);
  Status EmitBatches(StageContext& ctx);
  // The seeds of batches [first, first + count) (lists read ahead; none unless aggregated).
  std::vector<int64_t> NextSeeds(std::span<const std::span<const int64_t>> batches, size_t first,
                                 size_t count) const;
  Status EmitGroup(std::span<const std::span<const int64_t>> batches,
                   std::vector<int64_t> next_seeds,
                   const std::shared_ptr<const ResidentSet>& resident, int64_t* index,
                   StageContext& ctx);
  Status SampleItems(StageContext& ctx);
  // Samples a work item's batches. The first group of an aggregated pass is sampled in two halves
  // at once (the second on a helper thread): nothing else runs then -- the pass has admitted that
  // group alone and computes nothing yet -- and the pass's reads wait for it (2M nodes at 25%:
  // ~0.3 s per pass with one thread). The batches do not depend on the split (each has its own
  // seed); the second half's sampler scratch is transient, within what the window leaves
  // unreserved while one group is in flight.
  Status SampleGroup(const WorkItem& item, std::span<const uint64_t> sample_seeds,
                     std::span<sampler::MiniBatch* const> batches);
  Status GatherRows(StageContext& ctx);
  Status GatherGroups(StageContext& ctx);
  Status GatherGroup(int64_t first, int size, std::map<int64_t, SampledItem>* pending,
                     StageContext& ctx);
  // Aggregated with opt_.regroup: the group size for the groups not yet admitted, from the
  // largest batch sampled so far (sample stage).
  void Regroup(std::span<const SampledItem> sampled);
  // Gives `prepared` a staging buffer of `floats` (the recycled one when there is one), counting
  // any spare capacity it brings against the window.
  void Stage(PreparedBatch& prepared, size_t floats);

  BufferedGraph* const graph_;
  const EpochRunnerOptions& opt_;
  const EpochPlan& plan_;
  const SampleGroupFn& sample_;
  const int64_t dim_;
  const bool aggregate_;
  BoundedQueue<WorkItem> work_;
  BoundedQueue<SampledItem> sampled_;
  BoundedQueue<PreparedBatch> ready_;
  BoundedQueue<PinPtr> loaded_;
  RecycledStaging recycled_;
  ListsReadAhead lists_ahead_;  // read by one group for the next (aggregated)
  InFlightWindow window_;
  SampledThrough sampled_through_;  // aggregated with opt_.regroup
  std::atomic<int> group_size_;     // aggregated: batches per group admitted from now on
  BatchShape largest_;              // sample stage only (one thread when aggregated)
  const PassParts parts_;           // the sampler's seed of each batch
};

void EpochRun::AddTo(Pipeline* pipeline) {
  pipeline->AddQueue(&work_);
  pipeline->AddQueue(&sampled_);
  pipeline->AddQueue(&ready_);
  pipeline->AddQueue(&loaded_);
  pipeline->OnCancel([this] {
    window_.Cancel();
    sampled_through_.Cancel();
  });
  pipeline->AddStage("io", 1, [this](StageContext& ctx) { return PinPartitions(ctx); }, {&loaded_});
  pipeline->AddStage("plan", 1, [this](StageContext& ctx) { return EmitBatches(ctx); }, {&work_});
  pipeline->AddStage("sample", aggregate_ ? 1 : opt_.sample_threads,
                     [this](StageContext& ctx) { return SampleItems(ctx); }, {&sampled_});
  if (aggregate_) {
    pipeline->AddStage("gather", 1, [this](StageContext& ctx) { return GatherGroups(ctx); },
                       {&ready_});
  } else {
    pipeline->AddStage("gather", opt_.gather_threads,
                       [this](StageContext& ctx) { return GatherRows(ctx); }, {&ready_});
  }
}

Status EpochRun::PinPartitions(StageContext& ctx) {
  storage::BufferPool& pool = graph_->pool();
  for (uint32_t p : plan_.PartitionAccessSequence()) {
    auto pin = pool.Pin(p);
    if (!pin.ok()) return pin.status();
    if (!loaded_.Push(std::make_shared<const storage::PartitionPin>(std::move(pin).value()),
                      ctx.timer())) {
      return Status::Aborted("cancelled");
    }
    ctx.AddItems(1);
  }
  return Status::Ok();
}

Status EpochRun::EmitBatches(StageContext& ctx) {
  std::vector<PinPtr> pins(plan_.num_partitions());
  int64_t index = 0;
  for (size_t s = 0; s < plan_.states().size(); ++s) {
    const BufferState& state = plan_.states()[s];
    if (state.evicted != kNoPartition) pins[state.evicted].reset();
    for (uint32_t p : state.resident) {
      if (pins[p] != nullptr) continue;
      auto pin = loaded_.Pop(ctx.timer());
      if (!pin.has_value()) return Status::Aborted("cancelled");
      SKIFF_CHECK((*pin)->partition() == p);
      pins[p] = std::move(*pin);
    }
    auto resident = std::make_shared<const ResidentSet>(pins);
    const std::vector<std::span<const int64_t>> batches =
        opt_.parts.empty() ? plan_.Batches(s, opt_.batch_size)
                           : CutBatches(state.train_nodes, opt_.batch_size, opt_.parts);
    for (size_t first = 0; first < batches.size();) {
      if (aggregate_ && opt_.regroup && !sampled_through_.WaitFor(index, ctx.timer())) {
        return Status::Aborted("cancelled");
      }
      const auto group = static_cast<size_t>(aggregate_ ? group_size_.load() : 1);
      const size_t size = std::min(group, batches.size() - first);
      SKIFF_RETURN_IF_ERROR(EmitGroup(std::span(batches).subspan(first, size),
                                      NextSeeds(batches, first + size, size), resident, &index,
                                      ctx));
      first += size;
    }
  }
  return Status::Ok();
}

// Admits one gather group and hands it to the samplers: as one item when aggregated, else batch
// by batch.
std::vector<int64_t> EpochRun::NextSeeds(std::span<const std::span<const int64_t>> batches,
                                         size_t first, size_t count) const {
  std::vector<int64_t> seeds;
  if (!aggregate_ || opt_.lists_ahead_seeds <= 0) return seeds;
  const auto cap = static_cast<size_t>(opt_.lists_ahead_seeds);
  for (size_t b = first; b < std::min(batches.size(), first + count); ++b) {
    const size_t take = std::min(batches[b].size(), cap - seeds.size());
    seeds.insert(seeds.end(), batches[b].begin(),
                 batches[b].begin() + static_cast<ptrdiff_t>(take));
    if (seeds.size() == cap) break;
  }
  return seeds;
}

Status EpochRun::EmitGroup(std::span<const std::span<const int64_t>> batches,
                           std::vector<int64_t> next_seeds,
                           const std::shared_ptr<const ResidentSet>& resident, int64_t* index,
                           StageContext& ctx) {
  const auto size = static_cast<int>(batches.size());
  const int64_t group_first = *index;
  // A kept staging buffer must not hold a group back: its sampling and gathering would then wait
  // for the consumer instead of overlapping its work (see Release).
  const std::optional<uint64_t> reserved =
      window_.Admit(group_first, size, ctx.timer(), [this] { recycled_.Drop(&window_); });
  if (!reserved.has_value()) return Status::Aborted("cancelled");
  const int per_item = aggregate_ ? size : 1;
  for (int b = 0; b < size; b += per_item) {
    WorkItem item{*index, group_first, size, *reserved, {}, {}, resident};
    for (int i = b; i < b + per_item; ++i) item.seeds.push_back(batches[static_cast<size_t>(i)]);
    if (aggregate_) item.next_seeds = std::move(next_seeds);
    if (!work_.Push(std::move(item), ctx.timer())) return Status::Aborted("cancelled");
    *index += per_item;
    ctx.AddItems(per_item);
  }
  return Status::Ok();
}

Status EpochRun::SampleItems(StageContext& ctx) {
  while (auto item = work_.Pop(ctx.timer())) {
    const size_t count = item->seeds.size();
    std::vector<SampledItem> out(count);
    std::vector<uint64_t> sample_seeds(count);
    std::vector<sampler::MiniBatch*> batches(count);
    for (size_t i = 0; i < count; ++i) {
      out[i].group_first = item->group_first;
      out[i].group_size = item->group_size;
      out[i].prepared.index = item->index + static_cast<int64_t>(i);
      sample_seeds[i] = out[i].prepared.sample_seed =
          parts_.SampleSeed(opt_.seed, opt_.epoch, out[i].prepared.index);
      batches[i] = &out[i].prepared.batch;
    }
    SKIFF_RETURN_IF_ERROR(
        SampleGroup(*item, sample_seeds, batches)
            .WithContext(count == 1 ? "sampling batch " + std::to_string(item->index)
                                    : "sampling batches " + std::to_string(item->index) + ".." +
                                          std::to_string(item->index + count - 1)));
    if (aggregate_ && opt_.regroup) {
      Regroup(out);
      sampled_through_.Advance(item->index + static_cast<int64_t>(count));
    }
    // Aggregated: the group's read schedule is prepared here, so its read starts at once.
    std::shared_ptr<const AggregationPlan> aggregation_plan =
        aggregate_ ? PrepareAggregation(batches) : nullptr;
    if (aggregation_plan != nullptr) {
      for (sampler::MiniBatch* b : batches) CondenseAggregated(b);  // the plan holds the rest
    }
    for (SampledItem& sampled_item : out) {
      sampled_item.resident = item->resident;
      PreparedBatch& prepared = sampled_item.prepared;
      // Without gathering (the model holds the features) a batch holds no rows.
      prepared.held_bytes = HeldBytes(prepared.batch, opt_.gather_features ? dim_ : 0, aggregate_);
      if (aggregation_plan != nullptr && &sampled_item == &out.front()) {
        prepared.held_bytes += AggregationPlanBytes(*aggregation_plan);
      }
      sampled_item.aggregation_plan = aggregation_plan;
      window_.Resize(item->reserved, prepared.held_bytes);
      window_.Observe(prepared.held_bytes);
      if (aggregation_plan != nullptr) {
        window_.Pending(AggregatedFeatureBytes(prepared.batch, dim_));
      }
      if (!sampled_.Push(std::move(sampled_item), ctx.timer())) {
        return Status::Aborted("cancelled");
      }
    }
    item->resident.reset();
    ctx.AddItems(static_cast<int64_t>(count));
  }
  if (opt_.after_sampling) {
    return opt_.after_sampling([&](uint64_t bytes) { return window_.Hold(bytes, ctx.timer()); });
  }
  return Status::Ok();
}

Status EpochRun::SampleGroup(const WorkItem& item, std::span<const uint64_t> sample_seeds,
                             std::span<sampler::MiniBatch* const> batches) {
  const size_t count = batches.size();
  // The group's lists read ahead (and the next group's, to read ahead) are used by one sampler
  // thread at a time; split in halves, the second half reads the next group's.
  const BatchGraph view(graph_, item.resident.get(), aggregate_ ? &lists_ahead_ : nullptr,
                        item.next_seeds);
  if (!aggregate_ || item.index != 0 || count < 2) {
    return sample_(view, item.seeds, sample_seeds, batches);
  }
  const BatchGraph plain(graph_, item.resident.get());
  const size_t half = count / 2;
  const std::span<const std::span<const int64_t>> seeds(item.seeds);
  Status second;
  {
    std::jthread helper([&] {
      second =
          sample_(view, seeds.subspan(half), sample_seeds.subspan(half), batches.subspan(half));
    });
    const Status first =
        sample_(plain, seeds.first(half), sample_seeds.first(half), batches.first(half));
    if (!first.ok()) return first;  // the helper is joined first
  }
  return second;
}

void EpochRun::Regroup(std::span<const SampledItem> sampled) {
  for (const SampledItem& item : sampled) {
    largest_ = LargerShape(largest_, ShapeOf(item.prepared.batch));
  }
  const GatherGroupSize size = opt_.regroup(largest_);
  group_size_.store(size.group);
  window_.Regroup(2 * static_cast<int64_t>(size.group), size.sampled_batch_bytes);
}

void EpochRun::Stage(PreparedBatch& prepared, size_t floats) {
  recycled_.TakeInto(&prepared.features, &window_);
  prepared.features.resize(floats);
  const uint64_t held =
      prepared.held_bytes + (prepared.features.capacity() - prepared.features.size()) * 4;
  window_.Resize(prepared.held_bytes, held);
  prepared.held_bytes = held;
}

Status EpochRun::GatherRows(StageContext& ctx) {
  while (auto item = sampled_.Pop(ctx.timer())) {
    PreparedBatch& prepared = item->prepared;
    const auto& nodes = prepared.batch.input_nodes;
    if (opt_.gather_features) {
      Stage(prepared, nodes.size() * static_cast<size_t>(dim_));
      SKIFF_RETURN_IF_ERROR(
          graph_->Features(*item->resident, nodes, prepared.features.data())
              .WithContext("gathering features of batch " + std::to_string(prepared.index)));
    }
    item->resident.reset();  // unpin: compute needs only the staged features
    if (!ready_.Push(std::move(prepared), ctx.timer())) return Status::Aborted("cancelled");
    ctx.AddItems(1);
  }
  return Status::Ok();
}

// Groups are gathered in order, each once all its batches are sampled (they may arrive in any
// order).
Status EpochRun::GatherGroups(StageContext& ctx) {
  std::map<int64_t, SampledItem> pending;  // sampled, waiting for the rest of their group
  int64_t next = 0;                        // the first batch of the next group
  while (auto item = sampled_.Pop(ctx.timer())) {
    pending.emplace(item->prepared.index, std::move(*item));
    while (pending.count(next) > 0) {
      const int size = pending.at(next).group_size;
      SKIFF_CHECK(pending.at(next).group_first == next);
      bool whole = true;
      for (int64_t i = next; i < next + size && whole; ++i) whole = pending.count(i) > 0;
      if (!whole) break;
      SKIFF_RETURN_IF_ERROR(GatherGroup(next, size, &pending, ctx));
      next += size;
    }
  }
  if (!pending.empty()) {
    return Status::Internal("gather stage ended with " + std::to_string(pending.size()) +
                            " batches of an incomplete group (next " + std::to_string(next) + ")");
  }
  return Status::Ok();
}

// Gathers batches [first, first + size) of `pending` in one pass and hands them to compute.
Status EpochRun::GatherGroup(int64_t first, int size, std::map<int64_t, SampledItem>* pending,
                             StageContext& ctx) {
  // The group's features are reserved together: they are gathered together.
  uint64_t features = 0;
  for (int64_t i = first; i < first + size; ++i) {
    features += AggregatedFeatureBytes(pending->at(i).prepared.batch, dim_);
  }
  if (!window_.Reserve(features, size, ctx.timer())) return Status::Aborted("cancelled");
  std::vector<AggregationTarget> targets;
  for (int64_t i = first; i < first + size; ++i) {
    PreparedBatch& prepared = pending->at(i).prepared;
    prepared.held_bytes += AggregatedFeatureBytes(prepared.batch, dim_);
    const auto nd = static_cast<size_t>(prepared.batch.blocks.at(0).num_dst);
    Stage(prepared, 2 * nd * static_cast<size_t>(dim_));
    prepared.aggregated = true;
    float* rows = prepared.features.data();
    targets.push_back({&prepared.batch, rows, rows + nd * static_cast<size_t>(dim_),
                       opt_.dropout_seed ? opt_.dropout_seed(i) : 0});
  }
  const std::shared_ptr<const AggregationPlan> plan = pending->at(first).aggregation_plan;
  SKIFF_CHECK(plan != nullptr);
  SKIFF_RETURN_IF_ERROR(
      GatherAggregated(*graph_, *pending->at(first).resident, *plan, targets, *opt_.aggregation)
          .WithContext("gathering features of batches " + std::to_string(first) + ".." +
                       std::to_string(first + size - 1)));
  // The schedule is spent: the first batch stops counting it.
  PreparedBatch& head = pending->at(first).prepared;
  const uint64_t plan_bytes = std::min(head.held_bytes, AggregationPlanBytes(*plan));
  window_.Resize(head.held_bytes, head.held_bytes - plan_bytes);
  head.held_bytes -= plan_bytes;
  for (int64_t i = first; i < first + size; ++i) {
    auto node = pending->extract(i);
    node.mapped().resident.reset();  // unpin
    node.mapped().aggregation_plan.reset();
    if (!ready_.Push(std::move(node.mapped().prepared), ctx.timer())) {
      return Status::Aborted("cancelled");
    }
    ctx.AddItems(1);
  }
  return Status::Ok();
}

void EpochRun::Release(PreparedBatch&& batch) {
  // Keep the staging buffer for a later batch (the window counts it while it waits), saving its
  // page faults -- unless an admission waits on it. Aggregated groups stage their buffers
  // together when gathered, so a kept buffer waits out a whole gather, and counted against the
  // allowance it held back the admission of the next group, whose sampling then could not overlap
  // that gather (2M nodes at 25%: training pass 10.4 s -> 9.2 s without). Batch by batch, a kept
  // buffer that leaves the allowance short held the next batch back until the consumer asked for
  // it (skiff.NodeLoader at 25% of 2M nodes: every batch prepared only then, ~1 s each).
  const uint64_t held = batch.held_bytes;
  const bool waits = aggregate_ ? window_.admission_waiting() : window_.admission_short_of_bytes();
  const uint64_t kept = waits ? 0 : recycled_.Put(&batch.features);
  window_.Done(held - std::min(held, kept), aggregate_);
}

// The epoch's I/O: the pool's and the graph's counters after minus before.
EpochIoStats IoStatsBetween(const storage::BufferPoolStats& pool_before,
                            const storage::BufferPoolStats& pool_after,
                            const GraphAccessCounters& graph_before,
                            const GraphAccessCounters& graph_after) {
  EpochIoStats io;
  io.bytes_read = pool_after.bytes_read_total - pool_before.bytes_read_total;
  io.fine_bytes_read = pool_after.fine_bytes_read - pool_before.fine_bytes_read;
  io.reads_issued = pool_after.reads_issued - pool_before.reads_issued;
  io.partition_loads = pool_after.partition_loads - pool_before.partition_loads;
  io.evictions = pool_after.evictions - pool_before.evictions;
  io.pin_hits = pool_after.hits - pool_before.hits;
  io.pin_misses = pool_after.misses - pool_before.misses;
  io.pool_stall_seconds = static_cast<double>(pool_after.stall_ns - pool_before.stall_ns) * 1e-9;
  io.fine_rows = graph_after.fine_rows - graph_before.fine_rows;
  io.cached_rows = graph_after.cached_rows - graph_before.cached_rows;
  io.fine_adjacency = graph_after.fine_adjacency - graph_before.fine_adjacency;
  io.fine_row_bytes = graph_after.fine_row_bytes - graph_before.fine_row_bytes;
  io.fine_adjacency_bytes = graph_after.fine_adjacency_bytes - graph_before.fine_adjacency_bytes;
  io.bytes_used = graph_after.bytes_used - graph_before.bytes_used;
  io.read_amplification =
      io.bytes_used > 0 ? static_cast<double>(io.bytes_read) / static_cast<double>(io.bytes_used)
                        : 0.0;
  return io;
}

}  // namespace

// What a started pass holds: its own copies of the options, plan and sampler (the runner that
// started it may be gone), the stages' pipeline on a driver thread, and the consumer's reorder
// buffer and timing (the "compute" stage of the report: busy between Next() calls, stalled in
// them).
struct PassStream::State {
  State(BufferedGraph* graph_in, EpochRunnerOptions options_in, EpochPlan plan_in,
        SampleGroupFn sample_in, int64_t expected_in)
      : graph(graph_in),
        options(std::move(options_in)),
        plan(std::move(plan_in)),
        sample(std::move(sample_in)),
        expected(expected_in),
        run(graph, options, plan, sample),
        compute("compute", 1) {}

  BufferedGraph* const graph;
  const EpochRunnerOptions options;
  const EpochPlan plan;
  const SampleGroupFn sample;
  const int64_t expected;  // batches of the pass
  EpochRun run;
  Pipeline pipeline;
  std::thread driver;
  Status stages_status;  // the pipeline's, once the driver is joined
  bool joined = false;
  bool ended = false;                        // Next returned nullopt
  Status error;                              // returned by every Next after the first error
  std::map<int64_t, PreparedBatch> pending;  // arrived ahead of their turn (at most the window)
  int64_t delivered = 0;
  int64_t seeds = 0;
  StageCounters compute;
  std::chrono::steady_clock::time_point start, last_return, end;
  bool returned = false;  // a batch was handed over (last_return is set)
  storage::BufferPoolStats pool_before;
  GraphAccessCounters graph_before;

  void Join() {
    if (joined) return;
    driver.join();
    joined = true;
  }

  bool Due() const { return !pending.empty() && pending.begin()->first == delivered; }

  // Takes batches from the ready queue into `pending` until the one due is there (true), the
  // queue ends (false), or `timeout` from `called` passes (*timed_out).
  bool Fill(std::chrono::nanoseconds timeout, std::chrono::steady_clock::time_point called,
            bool* timed_out) {
    if (Due()) return true;
    run.ConsumerWaiting(true);
    while (!Due()) {
      std::optional<PreparedBatch> item =
          timeout == std::chrono::nanoseconds::max()
              ? run.PopReady(nullptr)
              : run.PopReadyFor(timeout - (std::chrono::steady_clock::now() - called), timed_out);
      if (!item.has_value()) break;
      pending.emplace(item->index, std::move(*item));
    }
    run.ConsumerWaiting(false);
    return Due();
  }

  // Hands over the batch due.
  std::optional<PreparedBatch> TakeDue() {
    PreparedBatch batch = std::move(pending.begin()->second);
    pending.erase(pending.begin());
    ++delivered;
    seeds += static_cast<int64_t>(batch.batch.seeds.size());
    compute.AddItems(1);
    run.Delivered();
    return batch;
  }

  // The ready queue ended: the gather stage is done, or the pipeline stopped (its status says
  // which). Sets `error`, or `ended` when every batch was handed over.
  void End(std::chrono::steady_clock::time_point now) {
    Join();
    end = now;
    if (!stages_status.ok()) {
      error = stages_status;
    } else if (!pending.empty() || delivered != expected) {
      error = Status::Internal("epoch delivered " + std::to_string(delivered) + " of " +
                               std::to_string(expected) + " batches (" +
                               std::to_string(pending.size()) + " out of order)");
    } else {
      ended = true;
    }
  }
};

PassStream::PassStream(std::unique_ptr<State> state) : state_(std::move(state)) {}

PassStream::~PassStream() { Close(); }

void PassStream::Close() {
  if (!state_->ended) Cancel(Status::Aborted("pass stream closed"));
  state_->Join();
}

void PassStream::Account(PreparedBatch* batch, uint64_t bytes) {
  state_->run.Account(batch, bytes);
}

int64_t PassStream::num_batches() const { return state_->expected; }
int64_t PassStream::delivered() const { return state_->delivered; }

void PassStream::Cancel(Status reason) { state_->pipeline.Cancel(std::move(reason)); }

void PassStream::Release(PreparedBatch&& batch) { state_->run.Release(std::move(batch)); }

Result<std::optional<PreparedBatch>> PassStream::Next() {
  bool timed_out = false;
  return Next(std::chrono::nanoseconds::max(), &timed_out);
}

Result<std::optional<PreparedBatch>> PassStream::Next(std::chrono::nanoseconds timeout,
                                                      bool* timed_out) {
  State& st = *state_;
  *timed_out = false;
  if (!st.error.ok()) return st.error;
  if (st.ended) return std::optional<PreparedBatch>();
  const auto called = std::chrono::steady_clock::now();
  if (st.returned) st.compute.AddBusy(called - st.last_return);
  const bool ready = st.Fill(timeout, called, timed_out);
  const auto now = std::chrono::steady_clock::now();
  st.compute.AddStall(now - called);
  st.last_return = now;
  // After a timed-out wait the caller's time until it asks again is not a wait either.
  st.returned = ready || *timed_out;
  if (*timed_out) return std::optional<PreparedBatch>();
  if (ready) return st.TakeDue();
  st.End(now);
  if (!st.error.ok()) return st.error;
  return std::optional<PreparedBatch>();
}

Result<EpochReport> PassStream::Finish() {
  State& st = *state_;
  if (!st.ended) {
    return Status::InvalidArgument("the pass has " + std::to_string(st.expected - st.delivered) +
                                   " batches left to take");
  }
  EpochReport report;
  report.epoch = st.options.epoch;
  report.batches = st.delivered;
  report.seeds = st.seeds;
  report.buffer_states = st.plan.states().size();
  report.wall_seconds = std::chrono::duration<double>(st.end - st.start).count();
  report.stages = st.pipeline.stats();
  report.stages.push_back(st.compute.Snapshot());
  report.peak_batch_bytes = st.run.window().peak_bytes();
  report.peak_batches_in_flight = st.run.window().peak_in_flight();
  if (st.options.aggregation.has_value()) {
    report.first_group = std::max(st.options.gather_group, 1);
    report.last_group = st.run.group_size();
  }
  report.io = IoStatsBetween(st.pool_before, st.graph->pool().stats(), st.graph_before,
                             st.graph->counters());
  return report;
}

Result<std::unique_ptr<PassStream>> EpochRunner::Start(EpochPlan plan, SampleGroupFn sample) {
  const uint32_t k = plan.num_partitions();
  if (k != graph_->source().num_partitions()) {
    return Status::InvalidArgument("epoch plan has " + std::to_string(k) +
                                   " partitions, the dataset " +
                                   std::to_string(graph_->source().num_partitions()));
  }
  int64_t expected = plan.NumBatches(options_.batch_size);
  if (!options_.parts.empty()) {
    int64_t nodes = 0;
    for (const EpochRunnerOptions::Part& part : options_.parts) nodes += part.nodes;
    if (plan.states().size() != 1 ||
        nodes != static_cast<int64_t>(plan.states()[0].train_nodes.size())) {
      return Status::InvalidArgument(
          "a pass over several node sets needs a plan of one state holding their " +
          std::to_string(nodes) + " nodes");
    }
    expected = static_cast<int64_t>(
        CutBatches(plan.states()[0].train_nodes, options_.batch_size, options_.parts).size());
  }
  auto state = std::make_unique<PassStream::State>(graph_, options_, std::move(plan),
                                                   std::move(sample), expected);
  PassStream::State* st = state.get();
  st->pool_before = graph_->pool().stats();
  st->graph_before = graph_->counters();
  graph_->pool().SetPlan(st->plan.PartitionAccessSequence());
  st->run.AddTo(&st->pipeline);
  st->start = std::chrono::steady_clock::now();
  st->driver = std::thread([st] { st->stages_status = st->pipeline.Run(); });
  return std::unique_ptr<PassStream>(new PassStream(std::move(state)));
}

Result<EpochReport> RunToEnd(PassStream* stream, const ComputeFn& compute) {
  while (true) {
    SKIFF_ASSIGN_OR_RETURN(std::optional<PreparedBatch> batch, stream->Next());
    if (!batch.has_value()) break;
    if (Status status = compute(*batch); !status.ok()) {
      stream->Cancel(status);
      return status;
    }
    stream->Release(std::move(*batch));
  }
  return stream->Finish();
}

Result<EpochReport> EpochRunner::Run(const EpochPlan& plan, const SampleGroupFn& sample,
                                     const ComputeFn& compute) {
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<PassStream> stream, Start(plan, sample));
  return RunToEnd(stream.get(), compute);
}

std::string EpochReport::Describe() const {
  char line[512];
  std::snprintf(line, sizeof(line),
                "epoch %llu pipeline: %lld batches, %lld seeds, %zu buffer states, %.3fs\n",
                static_cast<unsigned long long>(epoch), static_cast<long long>(batches),
                static_cast<long long>(seeds), buffer_states, wall_seconds);
  std::string out = line;
  out += FormatStageStats(stages, wall_seconds);
  std::snprintf(
      line, sizeof(line),
      "  read %s (%s fine-grained; %llu partition loads, %llu evictions, %llu rows in "
      "%s + %llu adjacency lists in %s fine-grained), used %s, read amplification "
      "%.2fx, pins waited %.3fs\n",
      FormatBytes(io.bytes_read).c_str(), FormatBytes(io.fine_bytes_read).c_str(),
      static_cast<unsigned long long>(io.partition_loads),
      static_cast<unsigned long long>(io.evictions), static_cast<unsigned long long>(io.fine_rows),
      FormatBytes(io.fine_row_bytes).c_str(), static_cast<unsigned long long>(io.fine_adjacency),
      FormatBytes(io.fine_adjacency_bytes).c_str(), FormatBytes(io.bytes_used).c_str(),
      io.read_amplification, io.pool_stall_seconds);
  out += line;
  std::snprintf(line, sizeof(line),
                "  batches in flight: at most %lld, holding at most %s; %llu non-resident rows "
                "from the hot row cache\n",
                static_cast<long long>(peak_batches_in_flight),
                FormatBytes(peak_batch_bytes).c_str(),
                static_cast<unsigned long long>(io.cached_rows));
  out += line;
  if (first_group > 0) {
    std::snprintf(line, sizeof(line),
                  "  aggregated groups: %d batches at first, %d from the batches sampled\n",
                  first_group, last_group);
    out += line;
  }
  return out + DescribePhysicalLimit();
}

namespace {

double ComputeBusySeconds(const std::vector<StageStats>& stages) {
  for (const StageStats& stage : stages) {
    if (stage.name == "compute") return stage.busy_seconds;
  }
  return 0;
}

}  // namespace

std::string EpochReport::DescribePhysicalLimit() const {
  if (io.bytes_read == 0) return "";
  const double compute = ComputeBusySeconds(stages);
  char line[512];
  if (disk_bytes_per_second <= 0) {
    std::snprintf(line, sizeof(line),
                  "  physical limit: unknown (the disk's sequential read rate was not given); "
                  "compute busy %.3fs, reads averaged %s/s over the pass\n",
                  compute,
                  FormatBytes(static_cast<uint64_t>(static_cast<double>(io.bytes_read) /
                                                    std::max(wall_seconds, 1e-9)))
                      .c_str());
    return line;
  }
  const double reading = static_cast<double>(io.bytes_read) / disk_bytes_per_second;
  const double limit = std::max(reading, compute);
  std::snprintf(line, sizeof(line),
                "  physical limit: %s at %s/s is %.3fs of reading, compute busy %.3fs: the pass "
                "took %.2fx the larger (bound by %s)\n",
                FormatBytes(io.bytes_read).c_str(),
                FormatBytes(static_cast<uint64_t>(disk_bytes_per_second)).c_str(), reading, compute,
                limit > 0 ? wall_seconds / limit : 0.0,
                reading >= compute ? "the disk" : "compute");
  return line;
}

nlohmann::json EpochReport::ToJson() const {
  nlohmann::json stages_json = nlohmann::json::object();
  for (const StageStats& stage : stages) {
    stages_json[stage.name] = {{"busy_seconds", stage.busy_seconds},
                               {"stall_seconds", stage.stall_seconds},
                               {"items", stage.items},
                               {"threads", stage.threads}};
  }
  return {{"pipeline_seconds", wall_seconds},
          {"batches", batches},
          {"buffer_states", buffer_states},
          {"first_group", first_group},
          {"last_group", last_group},
          {"stages", stages_json},
          {"bytes_read", io.bytes_read},
          {"fine_bytes_read", io.fine_bytes_read},
          {"reads_issued", io.reads_issued},
          {"partition_loads", io.partition_loads},
          {"evictions", io.evictions},
          {"pin_hits", io.pin_hits},
          {"pin_misses", io.pin_misses},
          {"fine_rows", io.fine_rows},
          {"cached_rows", io.cached_rows},
          {"fine_adjacency_lists", io.fine_adjacency},
          {"fine_row_bytes", io.fine_row_bytes},
          {"fine_adjacency_bytes", io.fine_adjacency_bytes},
          {"bytes_used", io.bytes_used},
          {"read_amplification", io.read_amplification},
          {"pool_stall_seconds", io.pool_stall_seconds},
          {"peak_batches_in_flight", peak_batches_in_flight},
          {"peak_batch_bytes", peak_batch_bytes},
          {"disk_bytes_per_second", disk_bytes_per_second},
          {"read_seconds_at_disk_rate",
           disk_bytes_per_second > 0 ? static_cast<double>(io.bytes_read) / disk_bytes_per_second
                                     : 0.0}};
}

}  // namespace skiff::pipeline
