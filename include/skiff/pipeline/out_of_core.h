// OutOfCore: everything `skiff train` needs to run passes through the pipeline, with or without a
// memory budget, set up in one call.
//
// Create() opens the dataset's partitions for direct I/O (DatasetPartitionSource), plans the memory
// budget (PlanMemory: metadata, model, activations, the batches' byte allowance, a hot row cache,
// and what is left as partition slots; no budget: room for everything), creates the buffer pool
// with exactly that many slots, and fills the hot row cache. RunPass() then builds the plan of one
// pass over a node set (the training nodes, or valid/test nodes for evaluation) and runs it
// through the EpochRunner with the caller's sampler and compute step.
//
// Slots and plan: when every partition fits, the pool holds all k and the plan has one state (the
// in-memory case, through the same code). Otherwise the pool has s >= 1 slots and the buffer-state
// plan keeps c = max(s - 1, 1) partitions resident per state, the last slot receiving the next
// partition while the current state trains. With exact sampling and c < 16, training passes are
// one state in the in-memory batch order instead (uniform_training_order; docs/pipeline.md).
//
// Thread safety: one thread calls RunPass at a time; the callbacks follow EpochRunner's rules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/pipeline/epoch_plan.h"
#include "skiff/pipeline/epoch_runner.h"
#include "skiff/pipeline/hot_row_cache.h"
#include "skiff/pipeline/memory_budget.h"
#include "skiff/status.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/dataset_partition_source.h"

namespace skiff::pipeline {

struct OutOfCoreOptions {
  uint64_t memory_bytes = 0;  // --memory; 0: no budget, every partition resident (in memory)
  SamplingMode sampling = SamplingMode::kExact;
  int64_t batch_size = 1024;
  std::vector<int> fanouts;  // as given to the sampler
  // Evaluation passes: the largest batch size wanted (the budget may lower it so that an
  // evaluation batch needs no more memory than a training batch: eval_batch_size()).
  int64_t eval_batch_size = 0;
  std::vector<int> eval_fanouts;
  ModelShape model;  // widths and parameter count (for the budget)
  // The batches go to a caller's own model (MemoryBudgetInputs::external_model): `consumer_bytes`
  // reserved for it, and `consumer_batches` batches it may keep while asking for the next.
  bool external_model = false;
  uint64_t consumer_bytes = 0;
  int consumer_batches = 0;
  // Random partition orders walked per pass (EpochPlanOptions::rounds): more rounds mix the
  // partitions seen by consecutive batches more, at the cost of reloading partitions.
  uint32_t plan_rounds = 4;
  int sample_threads = 2;
  int gather_threads = 1;
  bool direct_io = true;  // O_DIRECT
  // Further int64 IDs the run holds in memory besides the node splits (link prediction's edge
  // split and epoch plan), counted in the budget's resident metadata.
  int64_t extra_ids = 0;
  // The run holds the dataset's labels and node splits (node classification). Link passes hold
  // neither: their seeds are the edge split's, counted in extra_ids.
  bool node_labels = true;
  bool normalize_rows = false;  // `--feature-norm row`: feature rows scaled to sum 1 at gather
  // The compute step takes the first layer's input aggregated (a kMean model on the CPU): when not
  // every partition fits, passes that ask for it (PassOptions::aggregation) gather aggregated.
  bool aggregated_input = false;
  // The model holds every feature row in device memory: batches are planned without feature rows
  // (MemoryBudgetInputs::features_on_device).
  bool features_on_device = false;
  // The model computes on a device with the rows on the host, and caches `device_cache_rows` of
  // them there (MemoryBudgetInputs::device_compute).
  bool device_compute = false;
  int64_t device_cache_rows = 0;
  int device_replicas = 1;  // MemoryBudgetInputs::device_replicas
  // With features_on_device, the graph too: the model samples on its device and the pipeline's
  // passes are not used (MemoryBudgetInputs::graph_on_device: a pool without partition slots).
  bool graph_on_device = false;
  // The sampler records node degrees (model::NeedsNodeDegrees): batches are planned with them.
  bool record_degrees = true;
  // Parts each training batch's compute may be cut into (MemoryBudgetInputs::micro_batches; 0:
  // chosen by the plan, memory_plan().micro_batches). 1 for callers that compute whole batches.
  int micro_batches = 1;
  storage::IoEngineKind io_engine = storage::IoEngineKind::kAuto;
  // Unpartitioned datasets are split into ranges of this many nodes (0: 16 ranges).
  int64_t nodes_per_partition = 0;
  std::shared_ptr<storage::FaultInjector> faults;  // tests
};

struct PassOptions {
  int64_t batch_size = 1024;
  uint64_t seed = 0;
  uint64_t stream = 0;  // distinguishes training from evaluation passes
  uint64_t epoch = 0;
  // When not empty, the pass runs as one buffer state whose nodes are in this order
  // (EpochPlan::SingleState: the training core's batch order, so the pass draws the same batches
  // as train::BatchStream) -- with every partition resident, or with the buffer's partitions
  // resident and the rest read fine-grained (uniform seeds). Empty: the plan's own states.
  std::vector<int64_t> resident_order;
  // Gather the first layer's input aggregated, when the plan chose to (OutOfCore::
  // aggregated_input()); `dropout_seed(index)`: the Forward dropout seed of batch `index`.
  std::optional<AggregationOptions> aggregation = std::nullopt;
  std::function<uint64_t(int64_t index)> dropout_seed = nullptr;
  // False: batches are handed over without features (the model holds them on its device).
  bool gather_features = true;
  // Several node sets in one pass (EpochRunnerOptions::parts): `nodes` (or resident_order) are the
  // sets one after the other; the pass runs as one buffer state.
  std::vector<EpochRunnerOptions::Part> parts = {};
  // EpochRunnerOptions::after_sampling.
  std::function<Status(const std::function<bool(uint64_t bytes)>& hold)> after_sampling = nullptr;
  // EpochRunnerOptions::admit_past_consumer: the consumer pulls and may keep batches.
  bool admit_past_consumer = false;
};

class OutOfCore {
 public:
  // The pool's fine-read scratch for a dataset: fine reads merge across small gaps into long runs
  // (BufferPoolOptions::fine_read_merge_gap), and up to 16 MiB keeps enough of them in flight to
  // stream at the disk's sequential rate. An aggregated group's row stream hands its chunks over
  // in file order, so a slot is free again only once every earlier chunk has landed: one late read
  // holds up the slots behind it, and a deeper scratch keeps the disk busy meanwhile (2M nodes at
  // 25%: 4 MiB -> 16 MiB took the training pass's gather from 8.0-9.1 s to 7.0-7.3 s). 1/64 of the
  // feature bytes, at most 1/20 of a budget (`budget_bytes` > 0), 4-16 MiB, so small datasets and
  // small budgets keep small minimums. `adjacency_only`: the partitions hold adjacency only (the
  // model holds the features), so fine reads serve neighbour lists: 1/64 of those bytes instead.
  static uint64_t FineReadScratchBytes(const format::Manifest& manifest, uint64_t budget_bytes = 0,
                                       bool adjacency_only = false);

  // `dataset` must outlive the object. ResourceExhausted (with the minimum) when the budget cannot
  // hold a working set; NotFound / IOError from opening the files.
  static Result<std::unique_ptr<OutOfCore>> Create(const format::Dataset* dataset,
                                                   const OutOfCoreOptions& options);

  // Runs one pass over `nodes` (each once, order planned from (seed, stream, epoch)) through the
  // pipeline. Returns the pass's report or the first error of any stage. A pass with a
  // PassOptions::resident_order takes its nodes from that order (`nodes` may then be empty) and
  // keeps it as its plan: callers move the options in rather than copy an epoch's seeds.
  Result<EpochReport> RunPass(std::span<const int64_t> nodes, PassOptions pass,
                              const SampleGroupFn& sample, const ComputeFn& compute);
  // The same pass, pulled: its stages start now and the caller takes the batches from the stream
  // (PassStream). One stream at a time; it must not outlive this object.
  Result<std::unique_ptr<PassStream>> StartPass(std::span<const int64_t> nodes, PassOptions pass,
                                                SampleGroupFn sample);
  // The sampler threads a pass runs: OutOfCoreOptions::sample_threads, at most the plan's batches
  // in flight when a row plan has a budget (more would wait, each keeping its ID map).
  int SampleThreads() const;
  // The gather threads, likewise: OutOfCoreOptions::gather_threads, at most the plan's batches in
  // flight with a budget (one batch admitted at a time keeps every other gather thread idle, and
  // the stage report would divide the gather's busy time among them).
  int GatherThreads() const;
  // Aggregated: the size of the first gather group of the next training or evaluation pass, and
  // what each of its batches is expected to hold once sampled (as RunPass will cut it).
  GatherGroupSize FirstGatherGroup(bool training) const;
  // The batches' allowance in a training or evaluation pass: evaluation reads no lists ahead and
  // gives their bytes to its batches (MemoryPlan::lists_ahead_bytes).
  uint64_t AllowanceFor(bool training) const;
  Result<EpochReport> RunPass(std::span<const int64_t> nodes, PassOptions pass,
                              const SampleFn& sample, const ComputeFn& compute) {
    return RunPass(nodes, std::move(pass), OneByOne(sample), compute);
  }

  const MemoryPlan& memory_plan() const { return memory_; }
  // The evaluation batch size the budget allows (<= OutOfCoreOptions::eval_batch_size).
  int64_t eval_batch_size() const { return memory_.eval_batch_size; }
  bool fully_resident() const { return plan_capacity_ >= source_->num_partitions(); }
  // Whether passes gather aggregated input in groups (MemoryPlan::aggregated_input).
  bool aggregated_input() const { return memory_.aggregated_input; }
  // True when training should draw its seeds uniformly (in-memory order) rather than from the
  // buffer states: every partition is resident, or too few are to mix the labels
  // (< kMinMixingResidentPartitions; see docs/pipeline.md) and exact sampling reads the rest.
  // In-buffer sampling never leaves the buffer, so it always follows the buffer states.
  bool uniform_training_order() const {
    return fully_resident() || (options_.sampling == SamplingMode::kExact &&
                                plan_capacity_ < kMinMixingResidentPartitions);
  }
  const OutOfCoreOptions& options() const { return options_; }
  uint32_t plan_capacity() const { return plan_capacity_; }
  uint32_t num_partitions() const { return source_->num_partitions(); }
  const BufferedGraph& graph() const { return *graph_; }
  // The same view in exact mode whatever the sampling mode (for DiskGraphSource and friends).
  const BufferedGraph& exact_graph() const { return *exact_graph_; }
  storage::BufferPool& pool() { return *pool_; }
  const HotRowCache& row_cache() const { return row_cache_; }
  // "16 partitions, 5 slots (4 resident + 1 loading), exact sampling, io_uring ..."
  std::string Describe() const;

 private:
  // The pass's epoch plan: the buffer states to visit and the nodes of each, or one state in the
  // given order (moved out of pass->resident_order). InvalidArgument names a node outside the
  // graph.
  Result<EpochPlan> PlanPass(std::span<const int64_t> nodes, PassOptions* pass) const;
  // Sets the runner's aggregated gathering for `pass` (its groups and allowance, and regrouping
  // from the batches sampled).
  void SetAggregation(const PassOptions& pass, EpochRunnerOptions* runner_options);
  // The gather group for aggregated batches of `shape` under that allowance.
  GatherGroupSize GroupFor(const BatchShape& shape, bool training) const;

  OutOfCore() = default;
  const format::Dataset* dataset_ = nullptr;
  OutOfCoreOptions options_;
  std::unique_ptr<storage::DatasetPartitionSource> source_;
  std::unique_ptr<storage::BufferPool> pool_;
  std::unique_ptr<BufferedGraph> graph_;
  std::unique_ptr<BufferedGraph> exact_graph_;  // for the disk sources, whatever the mode
  MemoryPlan memory_;
  DegreeProfile degrees_;  // the plan's, for regrouping from the batches sampled
  // Aggregated passes: the largest batch sampled so far by training passes ([0]) and by
  // evaluation passes ([1]); the next pass of the kind cuts its first groups from it. Written by
  // the sample stage of the pass running (one pass at a time).
  std::optional<BatchShape> sampled_shape_[2];
  HotRowCache row_cache_;  // filled at Create when the plan gives it bytes
  uint32_t plan_capacity_ = 0;
};

}  // namespace skiff::pipeline
