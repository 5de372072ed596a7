// EpochRunner: one pass over an EpochPlan through the out-of-core pipeline
//
//   io ─[loaded]─▶ plan ─[work]─▶ sample (N threads) ─[sampled]─▶ gather (M threads) ─[ready]─▶
//   compute
//
//   io       pins the partitions in the plan's access order (EpochPlan::PartitionAccessSequence),
//            one partition ahead of the plan stage: the next partition is read while the current
//            buffer state trains. Its busy time is time spent waiting for partitions to arrive
//            from disk. The pool evicts by Belady over the same sequence (SetPlan).
//   plan     walks the buffer states: takes each admitted partition's pin, drops its reference to
//            each evicted one, and emits the state's batches with a shared ResidentSet (a partition
//            is unpinned when the last batch of the last state holding it is gathered).
//   sample   calls the SampleFn on each batch's seeds with a BatchGraph view (neighbour lists via
//            BufferedGraph: pinned memory, or fine-grained reads in exact mode). Batches are
//            sampled in parallel; each gets its own seed from (seed, stream, epoch, batch index),
//            so the result does not depend on thread timing or on the memory budget. With
//            aggregated gathering one thread samples each gather group as a whole
//            (SampleGroupFn), so the group's neighbour lists of a hop are read in one batch.
//   gather   copies the batch's input features into its staging buffer (float32), then drops the
//            batch's pins -- compute never touches the buffer pool. With aggregated gathering
//            (EpochRunnerOptions::aggregation) it takes groups of up to gather_group consecutive
//            batches of one buffer state, reads the union of their rows once, sorted, and leaves
//            each batch its first layer's input aggregated (input_aggregator.h).
//   compute  receives the batches strictly in plan order (a reorder buffer absorbs the parallel
//            stages' jitter) and runs the model step (the ComputeFn).
// Each queue has a named capacity (EpochRunnerOptions), and the batches in flight share a byte
// allowance (backpressure: the plan stage admits a batch only while the batches in flight, counted
// at their actual size once sampled, leave room for one more). The first error of any stage (an I/O
// error, a checksum failure, an error returned by a callback) stops every stage and is returned by
// Run(); nothing is left blocked.
//
// The same runner serves the fully resident case (every partition pinned for the one state) and
// evaluation passes (a plan over valid/test nodes and a forward-only ComputeFn).
//
// Thread safety: Run() is called by one thread at a time. The SampleFn is called concurrently from
// the sample threads, and so is a SampleGroupFn (with aggregated gathering the first group of a
// pass is sampled in two halves at once); the ComputeFn from the compute thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "skiff/float_buffer.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/pipeline/epoch_plan.h"
#include "skiff/pipeline/input_aggregator.h"
#include "skiff/pipeline/memory_budget.h"
#include "skiff/pipeline/stage_stats.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"

namespace skiff::pipeline {

class ListsReadAhead;

// What a SampleFn sees of the graph for one batch: neighbour lists under the batch's buffer state.
// A SampleGroupFn may also be handed the seeds of the group after its own and where to leave their
// lists when its reads come across them (ResidentGraphSource, lists read ahead); the lists it
// finds there are its own seeds'.
class BatchGraph {
 public:
  BatchGraph(const BufferedGraph* graph, const ResidentSet* resident,
             ListsReadAhead* lists_ahead = nullptr, std::span<const int64_t> next_seeds = {})
      : graph_(graph), resident_(resident), lists_ahead_(lists_ahead), next_seeds_(next_seeds) {}
  Status Neighbors(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
                   std::vector<int64_t>* neighbors) const {
    return graph_->Neighbors(*resident_, nodes, indptr, neighbors);
  }
  int64_t num_nodes() const { return graph_->num_nodes(); }
  const BufferedGraph& graph() const { return *graph_; }
  const ResidentSet& resident() const { return *resident_; }
  ListsReadAhead* lists_ahead() const { return lists_ahead_; }
  std::span<const int64_t> next_seeds() const { return next_seeds_; }

 private:
  const BufferedGraph* graph_;
  const ResidentSet* resident_;
  ListsReadAhead* lists_ahead_;
  std::span<const int64_t> next_seeds_;
};

struct PreparedBatch {
  int64_t index = 0;         // position in the epoch (0, 1, ...)
  uint64_t sample_seed = 0;  // the seed its sampler call got
  sampler::MiniBatch batch;
  // batch.input_nodes.size() x feature_dim, row-major; when `aggregated`, block 0's num_dst own
  // rows then its num_dst aggregated rows (model::AggregateFirstLayerInput).
  FloatBuffer features;
  bool aggregated = false;
  uint64_t held_bytes = 0;  // what the batch counts against the batch allowance
};

using SampleFn = std::function<Status(const BatchGraph& graph, std::span<const int64_t> seeds,
                                      uint64_t sample_seed, sampler::MiniBatch* batch)>;
// Samples a group of batches at once (the batches of one gather group, or a single batch):
// batches[i] from seeds[i] with sample_seeds[i], each exactly as a SampleFn would, but free to
// share the group's reads (NeighborSampler::SampleGroup over one ResidentGraphSource).
using SampleGroupFn = std::function<Status(
    const BatchGraph& graph, std::span<const std::span<const int64_t>> seeds,
    std::span<const uint64_t> sample_seeds, std::span<sampler::MiniBatch* const> batches)>;
// A SampleGroupFn that samples the batches one by one with `sample`.
SampleGroupFn OneByOne(SampleFn sample);
using ComputeFn = std::function<Status(PreparedBatch& batch)>;

struct EpochRunnerOptions {
  int64_t batch_size = 1024;
  uint64_t seed = 0;
  uint64_t stream = 0;  // distinguishes passes of one epoch (training, validation, ...)
  uint64_t epoch = 0;
  int sample_threads = 2;
  int gather_threads = 1;
  size_t work_queue_capacity = 8;     // "work": seed lists waiting for a sampler (small items)
  size_t sampled_queue_capacity = 2;  // "sampled": sampled batches waiting for gather
  size_t ready_queue_capacity = 2;    // "ready": gathered batches waiting for compute
  // Bytes the batches in flight may hold together (0: no limit), and the size a batch is assumed
  // to have until it is sampled (MemoryPlan::batch_allowance / batch_bytes). The plan stage waits
  // while admitting another batch would exceed the allowance, unless no batch is in flight.
  uint64_t batch_allowance_bytes = 0;
  uint64_t expected_batch_bytes = 0;
  // Of expected_batch_bytes, what a sampled batch holds (the rest: its sampling's scratch). When
  // set, admission scales expected_batch_bytes by the sampled batches' actual sizes (at most 1).
  uint64_t expected_held_bytes = 0;
  // Aggregated gathering when set: groups of up to `gather_group` batches share one sorted read,
  // and `dropout_seed(index)` is the Forward dropout seed of batch `index` (training passes).
  std::optional<AggregationOptions> aggregation = std::nullopt;
  int gather_group = 1;
  std::function<uint64_t(int64_t index)> dropout_seed = nullptr;
  // Aggregated, when set: after each group is sampled, the size of the groups not yet admitted
  // (and what a batch of them is expected to hold while sampled) is recomputed from the largest
  // batch sampled so far in the pass (`gather_group` and `expected_batch_bytes` are the first
  // group's: the plan's estimate). Grouping changes the read schedule only, never the batches
  // or their arithmetic.
  std::function<GatherGroupSize(const BatchShape& largest)> regroup = nullptr;
  // Aggregated: each group's sampling is handed the seeds of the batches after it (as many
  // batches as it has, at most this many seeds; 0: none) and reads their lists ahead
  // (MemoryPlan::lists_ahead_seeds).
  int64_t lists_ahead_seeds = 0;
  // False: batches go to compute without features (the model holds them on its device); not
  // with aggregation.
  bool gather_features = true;
  // A pass over several node sets at once (evaluation of the validation and test nodes): the plan
  // is one state whose nodes are the sets one after the other, `nodes` each. Batches are cut within
  // each set, and batch i of set p is sampled with BatchSampleSeed(seed, parts[p].stream, epoch,
  // i), so each set draws the batches of a pass over it alone; gather groups span the sets, so
  // the sets share their reads of the feature file. Empty: one set, `stream`.
  // `first_batch`: the number of the part's first batch in its stream, so that batch i of the part
  // is sampled with BatchSampleSeed(seed, stream, epoch, first_batch + i) (a data-parallel rank's
  // share of a plan: one part per batch, each numbered as in the plan).
  struct Part {
    int64_t nodes = 0;
    uint64_t stream = 0;
    int64_t first_batch = 0;
  };
  std::vector<Part> parts = {};
  // Called once on the sample stage's thread after the pass's last batch is sampled. `hold(bytes)`
  // counts bytes against the batches' allowance until the pass ends, waiting until every batch
  // admitted has its features reserved and they fit (false when the pass is cancelled): a runner
  // may sample its next pass's first batches there, while this pass reads and computes its last.
  std::function<Status(const std::function<bool(uint64_t bytes)>& hold)> after_sampling = nullptr;
  // A consumer that pulls (PassStream) may keep batches while it asks for more (`list(loader)`
  // in Python): when it waits for a batch and every batch in flight is one it keeps, a batch is
  // admitted whatever the allowance says, so the pass never waits on the consumer's batches.
  // They still count against the allowance until released, so the pipeline prepares fewer
  // batches ahead while they are kept (one at a time when they fill it). False (the push loop of
  // Run, which releases each batch before asking for the next): no exception.
  bool admit_past_consumer = false;

  // Upper bound on sampled batches alive at once (sampling, queued, gathering, reordering,
  // computing), whatever the byte allowance; with aggregation, two groups.
  int InFlightBatches() const;
};

// The seed the sampler gets for batch `index` of a pass: the training core's
// sampler::BatchSeed(seed, stream, epoch, index), as its in-memory BatchStream uses.
uint64_t BatchSampleSeed(uint64_t seed, uint64_t stream, uint64_t epoch, int64_t index);

// The parts of a pass cut `batch_size` at a time (EpochRunnerOptions::parts; none: one part with
// `stream`): which part batch `index` is from, and the seed the sampler gets for it --
// BatchSampleSeed with its part's stream and its index within the part.
class PassParts {
 public:
  PassParts(std::vector<EpochRunnerOptions::Part> parts, int64_t batch_size, uint64_t stream);
  int PartOf(int64_t index) const;
  uint64_t SampleSeed(uint64_t seed, uint64_t epoch, int64_t index) const;

 private:
  std::vector<EpochRunnerOptions::Part> parts_;  // at least one
  std::vector<int64_t> first_;                   // each part's first batch
};

// The batches of `nodes` cut `batch_size` at a time within each part (EpochRunnerOptions::parts;
// their sizes add up to nodes.size()), or over all of them when `parts` is empty.
std::vector<std::span<const int64_t>> CutBatches(std::span<const int64_t> nodes, int64_t batch_size,
                                                 std::span<const EpochRunnerOptions::Part> parts);

struct EpochIoStats {
  uint64_t bytes_read = 0;       // everything the pool read (partition loads + fine reads)
  uint64_t fine_bytes_read = 0;  // of which fine-grained
  uint64_t reads_issued = 0;
  uint64_t partition_loads = 0;
  uint64_t evictions = 0;
  uint64_t pin_hits = 0;
  uint64_t pin_misses = 0;
  uint64_t fine_rows = 0;             // feature rows read fine-grained
  uint64_t cached_rows = 0;           // non-resident feature rows served by the hot row cache
  uint64_t fine_adjacency = 0;        // adjacency lists read fine-grained
  uint64_t fine_row_bytes = 0;        // fine-grained bytes read for rows
  uint64_t fine_adjacency_bytes = 0;  // and for adjacency lists
  uint64_t bytes_used = 0;            // adjacency + feature bytes the batches asked for
  double read_amplification = 0;      // bytes_read / bytes_used
  double pool_stall_seconds = 0;      // time pins waited for loads
};

struct EpochReport {
  uint64_t epoch = 0;
  int64_t batches = 0;
  int64_t seeds = 0;
  size_t buffer_states = 0;
  double wall_seconds = 0;
  std::vector<StageStats> stages;
  int64_t peak_batches_in_flight = 0;   // most batches admitted and not yet computed
  int first_group = 0, last_group = 0;  // aggregated: the group sizes the pass began and ended with
  // Most bytes counted for them together (actual once sampled), with the one staging buffer kept
  // for reuse; that buffer is counted twice between the sampling and the gathering of the batch
  // that takes it, so this errs high by at most one staging buffer.
  uint64_t peak_batch_bytes = 0;
  EpochIoStats io;
  // The disk's sequential read rate, for the physical-limit line (set by the caller that knows it:
  // skiff train --disk-bandwidth); 0: unknown.
  double disk_bytes_per_second = 0;

  std::string Describe() const;  // multi-line summary for the end of an epoch
  // The "physical limit" line of Describe (empty when the pass read nothing): how long the pass's
  // reads take at disk_bytes_per_second, beside the compute stage's busy time; the larger of the
  // two bounds the pass whatever the pipeline overlaps.
  std::string DescribePhysicalLimit() const;
  nlohmann::json ToJson() const;
};

// One pass started by EpochRunner::Start, pulled batch by batch by its consumer.
//
// The stages (io, plan, sample, gather) run ahead on their own threads within the in-flight
// window and the batches' byte allowance; Next() hands the batches over strictly in plan order (a
// reorder buffer absorbs the parallel stages' jitter). A batch counts against the window and the
// allowance from its admission until the consumer Release()s it, so the memory the consumer
// keeps is part of what the pass holds. EpochRunner::Run is this loop with a ComputeFn.
//
// Errors: the first error of any stage is returned by Next() (and again by later calls); the
// stages have then stopped. Cancel() stops them early from any thread: a Next() waiting returns
// `reason`. The destructor cancels and joins.
//
// Thread safety: Next(), Finish() and the accessors from one consumer thread; Release() and
// Cancel() from any thread. Every batch Next() returns must be released (or dropped) before the
// stream is destroyed.
class PassStream {
 public:
  ~PassStream();
  PassStream(const PassStream&) = delete;
  PassStream& operator=(const PassStream&) = delete;

  // The next batch in plan order; nullopt after the last one.
  Result<std::optional<PreparedBatch>> Next();
  // The same, waiting at most `timeout` (a caller that must answer signals polls): nullopt with
  // *timed_out set when the batch is not ready by then (call again; nothing is lost).
  Result<std::optional<PreparedBatch>> Next(std::chrono::nanoseconds timeout, bool* timed_out);
  // Hands a batch Next() returned back: its bytes leave the allowance and its staging buffer may
  // serve a later batch. Any order, any thread.
  void Release(PreparedBatch&& batch);
  // Stops the pass; a Next() waiting or to come returns `reason` (Aborted when OK).
  void Cancel(Status reason);
  // Cancels (unless the pass has ended) and waits for the stages' threads to end; batches handed
  // over stay valid and may still be released. Consumer thread.
  void Close();
  // Counts `bytes` more for a batch Next() returned (what the consumer derives from it and
  // keeps with it), until it is released. Consumer thread.
  void Account(PreparedBatch* batch, uint64_t bytes);
  // The pass's report once Next() has returned nullopt; InvalidArgument before.
  Result<EpochReport> Finish();

  int64_t num_batches() const;
  int64_t delivered() const;

 private:
  friend class EpochRunner;
  struct State;
  explicit PassStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Pulls every batch of `stream` into `compute` in order, releasing each after it, and returns the
// pass's report -- or the first error, the stream's or compute's (the stream is then cancelled).
Result<EpochReport> RunToEnd(PassStream* stream, const ComputeFn& compute);

class EpochRunner {
 public:
  // `graph` (and its pool) must outlive the runner.
  EpochRunner(BufferedGraph* graph, EpochRunnerOptions options);

  // Runs every batch of `plan` through sample -> gather -> compute, exactly once, the ComputeFn
  // seeing them in plan order. Returns the epoch's report, or the first error of any stage.
  Result<EpochReport> Run(const EpochPlan& plan, const SampleFn& sample, const ComputeFn& compute);
  // With aggregated gathering, the sample stage takes whole groups (one thread: a group's lists are
  // read together, and one group sampled ahead keeps the gather stage fed); otherwise each batch
  // is a group of one.
  Result<EpochReport> Run(const EpochPlan& plan, const SampleGroupFn& sample,
                          const ComputeFn& compute);
  // Starts the pass's stages and returns the stream its consumer pulls the batches from (see
  // PassStream). InvalidArgument for a plan that does not fit the runner's graph or parts. The
  // runner may be reused once the stream is started; the graph must outlive the stream.
  Result<std::unique_ptr<PassStream>> Start(EpochPlan plan, SampleGroupFn sample);

  const EpochRunnerOptions& options() const { return options_; }
  EpochRunnerOptions& mutable_options() { return options_; }

 private:
  BufferedGraph* graph_;
  EpochRunnerOptions options_;
};

}  // namespace skiff::pipeline
