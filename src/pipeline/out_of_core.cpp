#include "skiff/pipeline/out_of_core.h"

#include <algorithm>

#include "skiff/log.h"
#include "skiff/pipeline/epoch_plan.h"
#include "skiff/units.h"

namespace skiff::pipeline {

uint64_t OutOfCore::FineReadScratchBytes(const format::Manifest& manifest, uint64_t budget_bytes,
                                         bool adjacency_only) {
  const uint64_t served =
      adjacency_only
          ? static_cast<uint64_t>(manifest.num_edges) * format::DTypeBytes(manifest.neighbor_dtype)
          : static_cast<uint64_t>(manifest.num_nodes) * manifest.feature_row_bytes();
  const uint64_t wanted = budget_bytes > 0 ? std::min(served / 64, budget_bytes / 20) : served / 64;
  return std::clamp<uint64_t>(wanted, 4ull << 20, 16ull << 20);
}

namespace {

// What the memory plan is made from: the dataset, the pool's slot and scratch sizes under
// `pool_options`, and the run's model, batches and device placement.
MemoryBudgetInputs BudgetInputs(const format::Manifest& m, const OutOfCoreOptions& options,
                                const storage::DatasetPartitionSource& source,
                                const storage::BufferPoolOptions& pool_options) {
  const uint64_t pool_fixed = storage::BufferPool::BudgetFor(source, 0, pool_options);
  const uint64_t slot_bytes = storage::BufferPool::BudgetFor(source, 1, pool_options) - pool_fixed;
  MemoryBudgetInputs in;
  in.budget_bytes = options.memory_bytes;  // 0: every partition resident (the in-memory run)
  in.num_nodes = m.num_nodes;
  in.split_nodes =
      (options.node_labels ? m.train_count + m.valid_count + m.test_count : 0) + options.extra_ids;
  in.node_labels = options.node_labels;
  in.feature_dim = m.feature_dim;
  in.partition_slot_bytes = slot_bytes;
  in.pool_fixed_bytes = pool_fixed;
  in.packed_pool_bytes = storage::BufferPool::PackedBudgetFor(source, pool_options) - pool_fixed;
  in.num_partitions = source.num_partitions();
  in.min_resident_partitions = pool_options.min_resident_partitions;
  in.model = options.model;
  if (in.model.in_dim == 0) in.model.in_dim = m.feature_dim;
  if (in.model.num_classes == 0) in.model.num_classes = std::max<int64_t>(m.num_classes, 1);
  in.batch_size = options.batch_size;
  in.aggregated_input = options.aggregated_input;
  in.features_on_device = options.features_on_device;
  in.graph_on_device = options.graph_on_device;
  in.device_compute = options.device_compute;
  in.device_cache_rows = options.device_cache_rows;
  in.device_replicas = options.device_replicas;
  in.record_degrees = options.record_degrees;
  in.external_model = options.external_model;
  in.consumer_bytes = options.consumer_bytes;
  in.consumer_batches = options.consumer_batches;
  in.micro_batches = options.micro_batches;
  in.fanouts = options.fanouts;
  in.eval_batch_size = options.eval_batch_size;
  in.eval_fanouts = options.eval_fanouts;
  in.max_in_flight_batches = EpochRunnerOptions{.sample_threads = options.sample_threads,
                                                .gather_threads = options.gather_threads}
                                 .InFlightBatches();
  if (options.sampling == SamplingMode::kExact && !options.features_on_device) {
    // Feature rows of hubs (no use when the model holds every row on its device).
    in.cache_row_bytes = HotRowCache::BytesFor(1, m.feature_row_bytes(), 0);
  }
  return in;
}

}  // namespace

Result<std::unique_ptr<OutOfCore>> OutOfCore::Create(const format::Dataset* dataset,
                                                     const OutOfCoreOptions& options) {
  std::unique_ptr<OutOfCore> ooc(new OutOfCore());
  ooc->dataset_ = dataset;
  ooc->options_ = options;
  const format::Manifest& m = dataset->manifest();
  SKIFF_ASSIGN_OR_RETURN(ooc->source_,
                         storage::DatasetPartitionSource::Open(
                             dataset, {.direct = options.direct_io,
                                       .nodes_per_partition = options.nodes_per_partition,
                                       .adjacency_only = options.features_on_device}));
  const storage::DatasetPartitionSource& source = *ooc->source_;
  const uint32_t k = source.num_partitions();

  storage::BufferPoolOptions pool_options;
  // Two slots let one partition load while another is in use. Exact sampling can do with one: with
  // so few partitions resident it trains in the in-memory order from one static state
  // (uniform_training_order), and evaluation waits for each load instead of overlapping it.
  pool_options.min_resident_partitions =
      std::min<uint32_t>(options.sampling == SamplingMode::kExact ? 1 : 2, k);
  // The io stage pins one partition ahead itself (docs/pipeline.md): the pool's prefetch is off.
  pool_options.prefetch = false;
  pool_options.fine_read_scratch_bytes =
      FineReadScratchBytes(dataset->manifest(), options.memory_bytes, options.features_on_device);
  pool_options.engine.kind = options.io_engine;
  pool_options.engine.faults = options.faults;
  const MemoryBudgetInputs in = BudgetInputs(m, options, source, pool_options);
  ooc->degrees_ =
      DegreeProfile::Build(m.num_nodes, [&source](int64_t v) { return source.degree(v); });
  SKIFF_ASSIGN_OR_RETURN(ooc->memory_, PlanMemory(in, ooc->degrees_));

  const uint32_t slots = ooc->memory_.pool_slots;
  // Aggregated plans may leave no slot (PlanMemory): every row is then streamed; a plan for the
  // graph on the device leaves none either (nothing samples on the host).
  if (ooc->memory_.aggregated_input || options.graph_on_device) {
    pool_options.min_resident_partitions = 0;
  }
  ooc->plan_capacity_ = slots >= k ? k : slots == 0 ? 0 : std::max<uint32_t>(slots - 1, 1);
  // Aggregated passes draw their seeds uniformly and read most of the file per group whatever is
  // resident: more partitions would not help them.
  if (!ooc->memory_.aggregated_input && !options.graph_on_device) {
    if (const std::string advice = PartitionCountAdvice(k, ooc->plan_capacity_); !advice.empty()) {
      LogWarning("out of core: " + advice);
    }
  }
  // Each aggregated group reads most of the feature file: what is left to cut is the rows' size.
  if (ooc->memory_.aggregated_input && m.feature_dtype == format::DType::kFloat32) {
    LogInfo("out of core: each group of " + std::to_string(ooc->memory_.gather_group) +
            " batches reads most of the feature file; features stored as float16 (skiff convert "
            "or generate --feature-dtype float16) would halve those reads (docs/pipeline.md)");
  }
  pool_options.budget_bytes = storage::BufferPool::BudgetFor(source, slots, pool_options);
  SKIFF_ASSIGN_OR_RETURN(ooc->pool_, storage::BufferPool::Create(ooc->source_.get(), pool_options));
  ooc->graph_ =
      std::make_unique<BufferedGraph>(ooc->source_.get(), ooc->pool_.get(), options.sampling);

  ooc->exact_graph_ =
      std::make_unique<BufferedGraph>(ooc->source_.get(), ooc->pool_.get(), SamplingMode::kExact);
  if (ooc->memory_.row_cache_bytes > 0) {
    SKIFF_ASSIGN_OR_RETURN(ooc->row_cache_,
                           HotRowCache::Build(source, *ooc->pool_, ooc->memory_.row_cache_bytes));
    ooc->graph_->set_row_cache(&ooc->row_cache_);
    ooc->exact_graph_->set_row_cache(&ooc->row_cache_);
  }
  ooc->graph_->set_normalize_rows(options.normalize_rows);
  ooc->exact_graph_->set_normalize_rows(options.normalize_rows);
  return ooc;
}

Result<EpochPlan> OutOfCore::PlanPass(std::span<const int64_t> nodes, PassOptions* pass) const {
  const uint32_t k = source_->num_partitions();
  const std::span<const int64_t> order =
      pass->resident_order.empty() ? nodes : std::span<const int64_t>(pass->resident_order);
  for (int64_t v : order) {
    if (v < 0 || v >= graph_->num_nodes()) {
      return Status::InvalidArgument("node " + std::to_string(v) + " is not in [0, " +
                                     std::to_string(graph_->num_nodes()) + ")");
    }
  }
  if (!pass->resident_order.empty()) {
    return EpochPlan::SingleState(k, plan_capacity_, std::move(pass->resident_order));
  }
  // Without a resident partition there are no buffer states to follow, and several node sets pass
  // as one state: the nodes in their order.
  if (plan_capacity_ == 0 || !pass->parts.empty()) {
    return EpochPlan::SingleState(k, plan_capacity_, {nodes.begin(), nodes.end()});
  }
  std::vector<std::vector<int64_t>> by_partition(k);
  for (int64_t v : nodes) by_partition[source_->partition_of(v)].push_back(v);
  const uint64_t plan_seed = pass->seed ^ (pass->stream * 0x9E3779B97F4A7C15ull);
  return EpochPlan::Build(by_partition, {.buffer_capacity = plan_capacity_,
                                         .seed = plan_seed,
                                         .epoch = pass->epoch,
                                         .rounds = options_.plan_rounds});
}

void OutOfCore::SetAggregation(const PassOptions& pass, EpochRunnerOptions* runner_options) {
  runner_options->aggregation = pass.aggregation;
  // Batches reserve their features when gathered: admission counts the sampled structure only.
  const bool training = pass.aggregation->training;
  runner_options->dropout_seed = pass.dropout_seed;
  // The plan sized the first group from estimated batches; later groups follow the batches
  // actually sampled (evaluation's full neighbourhoods: estimated ~2x too large on power-law
  // graphs), under the same allowance. Passes of the same kind sample batches of the same
  // shape, so a pass after the first starts from the largest batch its kind has sampled:
  // otherwise each evaluation pass would cut its first groups from the estimate again
  // (2M nodes at 25%: groups of 9 where 13 fit, one more read of the feature file per pass).
  std::optional<BatchShape>& sampled = sampled_shape_[training ? 0 : 1];
  const GatherGroupSize first = FirstGatherGroup(training);
  runner_options->gather_group = first.group;
  runner_options->expected_batch_bytes = first.sampled_batch_bytes;
  // Training reads the next group's lists ahead; evaluation (whose seeds' lists lie close
  // together) gives their bytes to its batches.
  runner_options->batch_allowance_bytes = AllowanceFor(training);
  runner_options->lists_ahead_seeds = training ? memory_.lists_ahead_seeds : 0;
  runner_options->regroup = [this, &sampled, training](const BatchShape& largest) {
    sampled = sampled.has_value() ? LargerShape(*sampled, largest) : largest;
    return GroupFor(*sampled, training);
  };
}

Result<EpochReport> OutOfCore::RunPass(std::span<const int64_t> nodes, PassOptions pass,
                                       const SampleGroupFn& sample, const ComputeFn& compute) {
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<PassStream> stream,
                         StartPass(nodes, std::move(pass), sample));
  return RunToEnd(stream.get(), compute);
}

Result<std::unique_ptr<PassStream>> OutOfCore::StartPass(std::span<const int64_t> nodes,
                                                         PassOptions pass, SampleGroupFn sample) {
  SKIFF_ASSIGN_OR_RETURN(EpochPlan plan, PlanPass(nodes, &pass));
  EpochRunnerOptions runner_options{.batch_size = pass.batch_size,
                                    .seed = pass.seed,
                                    .stream = pass.stream,
                                    .epoch = pass.epoch,
                                    .sample_threads = SampleThreads(),
                                    .gather_threads = GatherThreads(),
                                    .batch_allowance_bytes = memory_.batch_allowance,
                                    .expected_batch_bytes = memory_.batch_bytes,
                                    .expected_held_bytes = memory_.batch_held_bytes};
  runner_options.gather_features = pass.gather_features;
  runner_options.parts = pass.parts;
  runner_options.after_sampling = pass.after_sampling;
  runner_options.admit_past_consumer = pass.admit_past_consumer;
  if (memory_.aggregated_input && pass.aggregation.has_value()) {
    SetAggregation(pass, &runner_options);
  }
  EpochRunner runner(graph_.get(), std::move(runner_options));
  return runner.Start(std::move(plan), std::move(sample));
}

int OutOfCore::SampleThreads() const {
  // With a budget, batches are admitted as it allows: row plans plan planned_in_flight of them,
  // each with one sampling's scratch. More sampler threads than that mostly wait, and each keeps
  // its node ID map (up to 4 bytes per graph node) after its sampling, outside the plan: 16
  // threads at 141 MiB on the 1m preset with --device cuda kept 16 (peak RSS 219 MiB against
  // 125 MiB with 2).
  if (memory_.budget_bytes == 0 || memory_.aggregated_input) return options_.sample_threads;
  return std::clamp(memory_.planned_in_flight, 1, options_.sample_threads);
}

int OutOfCore::GatherThreads() const {
  if (memory_.budget_bytes == 0 || memory_.aggregated_input) return options_.gather_threads;
  return std::clamp(memory_.planned_in_flight, 1, options_.gather_threads);
}

GatherGroupSize OutOfCore::FirstGatherGroup(bool training) const {
  // Passes of the same kind sample batches of the same shape, so a pass after the first starts
  // from the largest batch its kind has sampled (see RunPass).
  if (const std::optional<BatchShape>& sampled = sampled_shape_[training ? 0 : 1]) {
    return GroupFor(*sampled, training);
  }
  return training ? memory_.first_gather_group : memory_.eval_first_gather_group;
}

uint64_t OutOfCore::AllowanceFor(bool training) const {
  return memory_.batch_allowance + (training ? 0 : memory_.lists_ahead_bytes);
}

GatherGroupSize OutOfCore::GroupFor(const BatchShape& shape, bool training) const {
  return AggregatedGatherGroup(AllowanceFor(training), shape, degrees_, graph_->feature_dim());
}

std::string OutOfCore::Describe() const {
  const uint32_t k = source_->num_partitions();
  std::string out = std::to_string(k) + " partitions, ";
  if (options_.graph_on_device) {
    out += "none loaded (the graph and the features go to the device, which samples)";
  } else if (pool_->packed()) {
    out += "each in a slot of its own size (" +
           FormatBytes(pool_->allocated_bytes() - pool_->scratch_bytes()) +
           " in all, every partition resident)";
  } else {
    out += std::to_string(pool_->num_slots()) + " slots of " + FormatBytes(pool_->slot_bytes());
    if (pool_->num_slots() == 0) {
      out += " (none resident: every row is streamed)";
    } else if (plan_capacity_ >= k) {
      out += " (every partition resident)";
    } else {
      out += " (" + std::to_string(plan_capacity_) + " resident" +
             (pool_->num_slots() > plan_capacity_ ? " + 1 loading)" : ")");
    }
  }
  if (row_cache_.num_rows() > 0) {
    out += ", hot row cache of " + std::to_string(row_cache_.num_rows()) + " rows";
  }
  if (!options_.graph_on_device) {
    out += ", " + std::string(SamplingModeName(graph_->mode())) + " sampling";
  }
  out += ", " + pool_->engine().Describe() +
         (source_->file(storage::DatasetPartitionSource::kFeatureFile).direct() ? ", O_DIRECT"
                                                                                : ", buffered");
  return out;
}

}  // namespace skiff::pipeline
