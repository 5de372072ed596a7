#include "skiff/pipeline/trainer_passes.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "skiff/format/checksummed_file.h"
#include "skiff/log.h"
#include "skiff/pipeline/pass_cache.h"
#include "skiff/pipeline/resident_graph_source.h"
#include "skiff/random.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/step_accumulator.h"
#include "skiff/units.h"

namespace skiff::pipeline {

std::vector<int> EffectiveEvalFanouts(const train::TrainOptions& options) {
  if (!options.eval_fanouts.empty()) return options.eval_fanouts;
  return std::vector<int>(options.fanouts.size(), train::kDefaultEvalFanoutCap);
}

int RowGatherThreads(const ComputeSite& site, int threads) {
  // A device model that takes its input rows from the host: one gather thread copying a batch's
  // rows (~500k scattered 512-byte rows per batch at the GPU bar's setting, 50 ms) bounded the
  // training pass on an H200 while the 16 sampler threads were 4% busy (BENCHMARKS.md, "On an
  // H200"). The CPU model gathers on one thread: its compute threads are the same cores.
  if (!site.device || site.features_on_device) return 1;
  return std::clamp(threads / 4, 1, kMaxRowGatherThreads);
}

Result<ModelShape> HostModelShape(const format::Dataset& dataset,
                                  const train::TrainOptions& options) {
  const format::Manifest& m = dataset.manifest();
  if (m.feature_dim <= 0) {
    return Status::InvalidArgument("dataset " + dataset.dir() +
                                   " has no node features (feature_dim 0): training needs them "
                                   "(skiff convert --features)");
  }
  if (m.num_classes <= 0) {
    return Status::InvalidArgument("dataset " + dataset.dir() +
                                   " has no classes (num_classes 0): training needs labels "
                                   "(skiff convert --labels)");
  }
  // Size the model to budget its parameters, gradients and optimiser state.
  model::ModelConfig config = options.model;
  config.in_dim = m.feature_dim;
  config.num_classes = m.num_classes;
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> sizing, model::Model::CreateCpu(config));
  return ModelShape{
      .in_dim = m.feature_dim,
      .hidden = config.hidden_dim,
      .num_classes = m.num_classes,
      .heads = config.kind == model::ModelKind::kGat ? std::max(config.heads, 1) : 1,
      .attention = config.kind == model::ModelKind::kGat,
      .activation_in_place = model::ActivatesInPlace(config),
      .num_parameters = sizing->NumParameters(),
      .gradient_sums = train::StepGradientCopies(options.accumulate, options.world_size)};
}

Result<std::unique_ptr<OutOfCoreTraining>> OpenOutOfCoreTraining(const format::Dataset* dataset,
                                                                 const train::TrainOptions& options,
                                                                 uint64_t memory_bytes,
                                                                 SamplingMode sampling, int threads,
                                                                 const ComputeSite& site) {
  const format::Manifest& m = dataset->manifest();
  const model::ModelConfig& config = options.model;
  OutOfCoreOptions o;
  o.memory_bytes = memory_bytes;
  o.sampling = sampling;
  o.batch_size = options.batch_size;
  o.fanouts = options.fanouts;
  // The budget may cut evaluation batches so that they need no more than a training batch.
  o.eval_batch_size = options.eval_batch_size;
  o.eval_fanouts = EffectiveEvalFanouts(options);
  SKIFF_ASSIGN_OR_RETURN(o.model, HostModelShape(*dataset, options));
  o.normalize_rows = options.feature_norm == train::FeatureNorm::kRow;
  // In-buffer sampling follows the buffer states, which aggregated gathering does not need.
  o.aggregated_input = site.aggregated_input && sampling == SamplingMode::kExact &&
                       model::InputAggregationOf(config) != model::InputAggregation::kNone;
  o.sample_threads = std::max(1, threads);
  o.features_on_device = site.features_on_device;
  o.graph_on_device = site.graph_on_device;
  o.device_compute = site.device;  // features_on_device implies it (MemoryBudgetInputs)
  o.device_cache_rows = site.device_cache_rows;
  o.device_replicas = site.device_replicas;
  o.record_degrees = model::NeedsNodeDegrees(config.kind);
  o.gather_threads = RowGatherThreads(site, threads);
  o.micro_batches = options.micro_batches;
  auto out = std::make_unique<OutOfCoreTraining>();
  SKIFF_ASSIGN_OR_RETURN(out->ooc, OutOfCore::Create(dataset, o));
  out->graph = std::make_unique<DiskGraphSource>(out->ooc->exact_graph());
  out->features = std::make_unique<DiskFeatureSource>(out->ooc->exact_graph());
  train::TrainData& data = out->data;
  data.graph = out->graph.get();
  data.features = out->features.get();
  out->csr = std::make_unique<sampler::DatasetCsr>(*dataset);
  data.csr = out->csr.get();
  data.num_classes = m.num_classes;
  SKIFF_ASSIGN_OR_RETURN(data.labels, dataset->LoadLabels());
  SKIFF_ASSIGN_OR_RETURN(format::Dataset::NodeSplits splits, dataset->LoadSplits());
  data.train = std::move(splits.train);
  data.valid = std::move(splits.valid);
  data.test = std::move(splits.test);
  return out;
}

namespace {

// The evaluation passes kept for replay (PassCache), one per stream, made on first use in `dir`.
class KeptPasses {
 public:
  explicit KeptPasses(std::string dir) : dir_(std::move(dir)) {}
  // The stream's cache, or nullptr.
  PassCache* Find(uint64_t stream) const {
    auto it = caches_.find(stream);
    return it == caches_.end() ? nullptr : it->second.get();
  }
  // The stream's cache, made if needed; nullptr when there is no directory or no cache can be made
  // there (said once).
  PassCache* For(uint64_t stream) {
    if (dir_.empty()) return nullptr;
    auto it = caches_.find(stream);
    if (it != caches_.end()) return it->second.get();
    Result<std::unique_ptr<PassCache>> cache = PassCache::Create(dir_);
    if (!cache.ok()) {
      LogWarning(cache.status().message() + "; evaluation reads its batches again every epoch");
      dir_.clear();
      return nullptr;
    }
    return caches_.emplace(stream, std::move(*cache)).first->second.get();
  }
  // After a failed write: no more caches (the disk is likely full).
  void GiveUp(uint64_t stream, const Status& why) {
    LogWarning(why.message() + "; evaluation reads its batches again every epoch");
    caches_.erase(stream);
    dir_.clear();
  }

 private:
  std::string dir_;
  std::map<uint64_t, std::unique_ptr<PassCache>> caches_;
};

// What identifies a repeating pass's batches besides the runner's fixed settings (fanouts, seed)
// and its stream.
uint64_t PassKey(std::span<const int64_t> nodes, std::span<const EpochRunnerOptions::Part> parts,
                 int64_t batch_size, int64_t epoch) {
  uint64_t key = format::Xxh3(nodes.data(), nodes.size_bytes());
  for (const int64_t v : {batch_size, epoch}) key = Mix64(key ^ static_cast<uint64_t>(v));
  for (const EpochRunnerOptions::Part& part : parts) {
    key = Mix64(Mix64(Mix64(key ^ static_cast<uint64_t>(part.nodes)) ^ part.stream) ^
                static_cast<uint64_t>(part.first_batch));
  }
  return key;
}

// Between passes: the batches' arrays below the mmap threshold (tools/skiff/main.cpp) come from
// the heap arenas of the threads that built them, which keep what is freed; the next pass's threads
// may take other arenas, and its peak then stands on top of the kept memory (the 10m preset at
// 1 GiB: the second epoch's training pass peaked 25-50 MiB above the first's, past the promise).
// Hand it back to the system.
void ReleaseFreedMemory() { ::malloc_trim(0); }

// Replays a kept pass into `compute`; logs what it read when `print_reports`.
Status ReplayPass(PassCache& cache, int batches, const ComputeFn& compute, std::string* report_json,
                  bool print_reports) {
  const auto start = std::chrono::steady_clock::now();
  int64_t seeds = 0;
  SKIFF_RETURN_IF_ERROR(cache.Replay(
      [&](PreparedBatch& batch) {
        seeds += static_cast<int64_t>(batch.batch.seeds.size());
        return compute(batch);
      },
      batches));
  ReleaseFreedMemory();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report_json != nullptr) {
    *report_json = nlohmann::json{{"replayed", true},
                                  {"batches", cache.batches()},
                                  {"seeds", seeds},
                                  {"wall_seconds", seconds},
                                  {"bytes_read", cache.file_bytes()}}
                       .dump();
  }
  if (print_reports) {
    LogDebug("evaluation replayed from the scratch file: " + std::to_string(cache.batches()) +
             " batches, " + std::to_string(seeds) + " seeds, " + FormatBytes(cache.file_bytes()) +
             " read, " + std::to_string(seconds) + "s");
  }
  return Status::Ok();
}

}  // namespace

namespace {

// A pass's node sets (PassSpec::more), one after the other, as its pipeline pass cuts them; or
// the explicit batches of a rank's share (PassSpec::batch_numbers), a part each.
struct PassLayout {
  int64_t batch_size = 0;
  std::vector<const std::vector<int64_t>*> sets;
  std::vector<EpochRunnerOptions::Part> parts;  // each set's (or batch's) size and stream
  std::vector<int64_t> joined;                  // the sets' nodes, when there are several
  bool explicit_batches = false;                // the parts are batches, in the pass's order
  const std::vector<int64_t>& nodes() const { return sets.size() > 1 ? joined : *sets[0]; }
  PassParts Split() const { return PassParts(parts, batch_size, parts[0].stream); }
  // The node set of the pass's batch `index` (PreparedBatch::part): 0 for explicit batches.
  int SetOf(const PassParts& split, int64_t index) const {
    return explicit_batches ? 0 : split.PartOf(index);
  }
};

PassLayout LayoutOf(const train::PassSpec& pass, int64_t batch_size) {
  PassLayout layout;
  layout.batch_size = batch_size;
  layout.sets = {pass.nodes};
  if (pass.batch_numbers != nullptr) {
    // Batches of `batch_size` seeds one after the other, the last possibly shorter.
    SKIFF_CHECK(pass.more.empty());
    layout.explicit_batches = true;
    const auto n = static_cast<int64_t>(pass.nodes->size());
    for (size_t i = 0; i < pass.batch_numbers->size(); ++i) {
      const int64_t first = static_cast<int64_t>(i) * pass.batch_size;
      SKIFF_CHECK(first < n);
      layout.parts.push_back({std::min(pass.batch_size, n - first), pass.stream,
                              static_cast<int64_t>((*pass.batch_numbers)[i])});
    }
    SKIFF_CHECK(static_cast<int64_t>(layout.parts.size()) * pass.batch_size >= n);
    return layout;
  }
  for (const train::PassSpec::MoreNodes& more : pass.more) layout.sets.push_back(more.nodes);
  for (size_t p = 0; p < layout.sets.size(); ++p) {
    layout.parts.push_back({static_cast<int64_t>(layout.sets[p]->size()),
                            p == 0 ? pass.stream : pass.more[p - 1].stream});
    if (layout.sets.size() > 1) {
      layout.joined.insert(layout.joined.end(), layout.sets[p]->begin(), layout.sets[p]->end());
    }
  }
  return layout;
}

// The training core's batch order over the layout's sets (train::BatchStream's, set by set).
std::vector<int64_t> InMemoryOrder(const PassLayout& layout, bool training, uint64_t seed,
                                   int64_t epoch) {
  if (layout.explicit_batches) return layout.nodes();  // the plan's batches already
  std::vector<int64_t> order;
  for (const std::vector<int64_t>* set : layout.sets) {
    for (const auto& batch : train::PlanBatches(*set, layout.batch_size, training, seed,
                                                static_cast<uint64_t>(epoch))) {
      order.insert(order.end(), batch.begin(), batch.end());
    }
  }
  return order;
}

}  // namespace

SampleGroupFn LabelledSampleFn(std::vector<int> fanouts, bool record_degrees,
                               const std::vector<int32_t>* labels) {
  return [fanouts = std::move(fanouts), record_degrees, labels](
             const BatchGraph& view, std::span<const std::span<const int64_t>> seeds,
             std::span<const uint64_t> rng_seeds,
             std::span<sampler::MiniBatch* const> batches) -> Status {
    std::vector<int64_t> all_seeds;
    for (const std::span<const int64_t> s : seeds) {
      all_seeds.insert(all_seeds.end(), s.begin(), s.end());
    }
    ResidentGraphSource source(view.graph(), view.resident(), all_seeds,
                               static_cast<int>(fanouts.size()), view.lists_ahead(),
                               view.next_seeds());
    sampler::NeighborSampler sampler(source, fanouts, record_degrees);
    SKIFF_RETURN_IF_ERROR(sampler.SampleGroup(seeds, rng_seeds, batches));
    for (sampler::MiniBatch* batch : batches) {
      batch->labels.resize(batch->seeds.size());
      for (size_t i = 0; i < batch->seeds.size(); ++i) {
        batch->labels[i] = labels != nullptr ? (*labels)[batch->seeds[i]] : -1;
      }
    }
    return Status::Ok();
  };
}

namespace {

// Batches of the coming pass (PassSpec::then) sampled while the one before it ended, by their
// sample seed; the pass takes those it draws. Filled and emptied by the sample stages of
// consecutive passes, which may sample two halves of a group at once.
class SampledAhead {
 public:
  void Put(uint64_t sample_seed, sampler::MiniBatch batch) {
    MutexLock lock(&mu_);
    batches_.emplace(sample_seed, std::move(batch));
  }
  // Moves the batch sampled ahead with `sample_seed` for `seeds` into *out; false when none.
  bool Take(uint64_t sample_seed, std::span<const int64_t> seeds, sampler::MiniBatch* out) {
    MutexLock lock(&mu_);
    auto it = batches_.find(sample_seed);
    if (it == batches_.end() ||
        !std::equal(seeds.begin(), seeds.end(), it->second.seeds.begin(), it->second.seeds.end())) {
      return false;
    }
    *out = std::move(it->second);
    batches_.erase(it);
    return true;
  }
  void Clear() {
    MutexLock lock(&mu_);
    batches_.clear();
  }
  bool empty() const {
    MutexLock lock(&mu_);
    return batches_.empty();
  }

 private:
  mutable Mutex mu_;
  std::map<uint64_t, sampler::MiniBatch> batches_ SKIFF_GUARDED_BY(mu_);
};

// What a pass runner holds across passes.
struct RunnerState {
  OutOfCore* ooc = nullptr;
  const std::vector<int32_t>* labels = nullptr;
  std::vector<int> fanouts, eval_fanouts;
  bool record_degrees = false;
  uint64_t seed = 0;
  bool print_reports = false;
  double disk_bytes_per_second = 0;
  std::shared_ptr<KeptPasses> kept;
  std::shared_ptr<SampledAhead> ahead;
};

// Samples the first gather group of `next` (an evaluation gathered aggregated, not replayed) into
// state.ahead, holding its expected bytes with `hold` first; *count: how many batches.
Status SampleAhead(const RunnerState& state, const train::PassSpec& next,
                   const std::function<bool(uint64_t)>& hold, int64_t* count) {
  OutOfCore* const ooc = state.ooc;
  if (next.training || !next.gather_features || !ooc->aggregated_input() ||
      next.aggregation == model::InputAggregation::kNone) {
    return Status::Ok();
  }
  const PassLayout layout = LayoutOf(next, std::min(next.batch_size, ooc->eval_batch_size()));
  const PassCache* cache = state.kept->Find(next.stream);
  if (cache != nullptr &&
      cache->Holds(PassKey(layout.nodes(), layout.parts, layout.batch_size, next.epoch))) {
    return Status::Ok();  // it will be replayed
  }
  const std::vector<int64_t> order = InMemoryOrder(layout, false, state.seed, next.epoch);
  const std::vector<std::span<const int64_t>> batches =
      CutBatches(order, layout.batch_size, layout.parts);
  const GatherGroupSize first = ooc->FirstGatherGroup(/*training=*/false);
  const size_t n = std::min(batches.size(), static_cast<size_t>(first.group));
  if (n == 0) return Status::Ok();
  if (!hold(n * first.sampled_batch_bytes)) return Status::Aborted("cancelled");
  const PassParts split = layout.Split();
  std::vector<uint64_t> sample_seeds(n);
  std::vector<sampler::MiniBatch> sampled(n);
  std::vector<sampler::MiniBatch*> out(n);
  for (size_t i = 0; i < n; ++i) {
    sample_seeds[i] =
        split.SampleSeed(state.seed, static_cast<uint64_t>(next.epoch), static_cast<int64_t>(i));
    out[i] = &sampled[i];
  }
  // Exact sampling reads what is not resident: the batches do not depend on what is.
  const ResidentSet nothing(
      std::vector<std::shared_ptr<const storage::PartitionPin>>(ooc->num_partitions()));
  const BatchGraph view(&ooc->graph(), &nothing);
  SKIFF_RETURN_IF_ERROR(LabelledSampleFn(state.eval_fanouts, state.record_degrees, state.labels)(
                            view, std::span(batches).first(n), sample_seeds, out)
                            .WithContext("sampling the next pass's first batches"));
  for (size_t i = 0; i < n; ++i) state.ahead->Put(sample_seeds[i], std::move(sampled[i]));
  *count = static_cast<int64_t>(n);
  return Status::Ok();
}

Status RunPass(const RunnerState& state, const train::PassSpec& pass,
               const std::function<Status(train::PreparedBatch&)>& consume,
               std::string* report_json);

// Node sets share a pass only when they are evaluated aggregated (gather groups then span them);
// otherwise each runs as its own pass, one after the other, its batches tagged with its part.
Status RunSetsOneByOne(const RunnerState& state, const train::PassSpec& pass,
                       const std::function<Status(train::PreparedBatch&)>& consume,
                       std::string* report_json) {
  for (size_t p = 0; p <= pass.more.size(); ++p) {
    train::PassSpec one = pass;
    one.more.clear();
    if (p > 0) {
      one.nodes = pass.more[p - 1].nodes;
      one.stream = pass.more[p - 1].stream;
    }
    const auto tagged = [&](train::PreparedBatch& batch) {
      batch.part = static_cast<int>(p);
      return consume(batch);
    };
    SKIFF_RETURN_IF_ERROR(RunPass(state, one, tagged, p == 0 ? report_json : nullptr));
  }
  return Status::Ok();
}

// `fresh`, except that batches sampled ahead (at the end of the pass before) are taken from
// `ahead` instead of sampled.
SampleGroupFn TakingAhead(SampledAhead* ahead, SampleGroupFn fresh) {
  return [ahead, fresh = std::move(fresh)](const BatchGraph& view,
                                           std::span<const std::span<const int64_t>> seeds,
                                           std::span<const uint64_t> rng_seeds,
                                           std::span<sampler::MiniBatch* const> batches) -> Status {
    if (ahead->empty()) return fresh(view, seeds, rng_seeds, batches);
    std::vector<std::span<const int64_t>> rest_seeds;
    std::vector<uint64_t> rest_rng;
    std::vector<sampler::MiniBatch*> rest;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (ahead->Take(rng_seeds[i], seeds[i], batches[i])) continue;
      rest_seeds.push_back(seeds[i]);
      rest_rng.push_back(rng_seeds[i]);
      rest.push_back(batches[i]);
    }
    return rest.empty() ? Status::Ok() : fresh(view, rest_seeds, rest_rng, rest);
  };
}

// The pipeline options of `pass` cut as `layout` (aggregated: as the model takes its input).
PassOptions OptionsFor(const RunnerState& state, const train::PassSpec& pass,
                       const PassLayout& layout, bool aggregated) {
  PassOptions options{.batch_size = layout.batch_size,
                      .seed = state.seed,
                      .stream = pass.stream,
                      .epoch = static_cast<uint64_t>(pass.epoch),
                      .resident_order = {},
                      .aggregation = std::nullopt,
                      .dropout_seed = nullptr,
                      .gather_features = pass.gather_features};
  if (layout.sets.size() > 1 || layout.explicit_batches) options.parts = layout.parts;
  if (aggregated) {
    options.aggregation = AggregationOptions{
        .kind = pass.aggregation, .dropout = pass.input_dropout, .training = pass.training};
    if (pass.training) options.dropout_seed = pass.dropout_seed;
  }
  const OutOfCore& ooc = *state.ooc;
  if (ooc.fully_resident() || (pass.training && ooc.uniform_training_order()) || aggregated) {
    // The in-memory batch order (train::BatchStream's), so that the same seed draws the
    // same batches whether or not the run is out of core. Evaluation out of core keeps
    // the plan's states -- it does not train, and they read less -- unless it gathers
    // aggregated: then consecutive batches share reads whatever their partitions, and
    // the plan's states would only cut the groups short.
    options.resident_order = InMemoryOrder(layout, pass.training, state.seed, pass.epoch);
  }
  return options;
}

// The pass's report: as JSON into *report_json (when given), and logged when `print`.
void ReportPass(const EpochReport& report, const train::PassSpec& pass, int64_t sampled_ahead,
                bool print, std::string* report_json) {
  if (report_json != nullptr) {
    nlohmann::json json = report.ToJson();
    json["next_pass_batches_sampled_ahead"] = sampled_ahead;
    *report_json = json.dump();
  }
  if (!print) return;
  if (!pass.training) {
    LogDebug("evaluation " + report.Describe());
    return;
  }
  LogInfo(report.Describe());
  if (sampled_ahead > 0) {
    LogDebug("the evaluation's first " + std::to_string(sampled_ahead) +
             " batches were sampled during the training pass's last groups");
  }
}

// Hands a batch to the Trainer's step as part `part` of its pass, and its staging buffer back to
// the pipeline for reuse.
Status HandOver(PreparedBatch& prepared, int part,
                const std::function<Status(train::PreparedBatch&)>& consume) {
  train::PreparedBatch batch;
  batch.index = prepared.index;
  batch.batch = std::move(prepared.batch);
  batch.features = std::move(prepared.features);
  batch.aggregated = prepared.aggregated;
  batch.part = part;
  batch.sample_seed = prepared.sample_seed;
  const Status status = consume(batch);
  prepared.features = std::move(batch.features);
  return status;
}

// What a pass does with the kept passes: replays `replay_batches` (> 0) batches at a time from
// `replay`, records itself into `record` (begun), or neither.
struct KeptPassUse {
  PassCache* replay = nullptr;
  int replay_batches = 0;
  PassCache* record = nullptr;
};

// An evaluation pass gathered aggregated (its batches then depend on the dataset alone) is
// replayed when it was kept, else kept as it runs when it will run again.
KeptPassUse UseOfKeptPasses(const RunnerState& state, const train::PassSpec& pass,
                            const PassLayout& layout, bool aggregated) {
  if (pass.training || !pass.gather_features || !aggregated) return {};
  KeptPasses* const kept = state.kept.get();
  PassCache* cache = kept->Find(pass.stream);
  const uint64_t key = PassKey(layout.nodes(), layout.parts, layout.batch_size, pass.epoch);
  const bool held = cache != nullptr && cache->Holds(key);
  // A replay holds its batches within the batches' allowance; a pass whose largest batch does
  // not fit there alone is computed again (and not written again).
  const int room =
      held ? cache->ReplayBatchesWithin(state.ooc->AllowanceFor(/*training=*/false)) : 0;
  if (room > 0) return {.replay = cache, .replay_batches = room};
  if (!held && pass.repeats && (cache = kept->For(pass.stream)) != nullptr) {
    cache->Begin(key);
    return {.record = cache};
  }
  return {};
}

// Ends a recording that ran to the end of its pass.
void SealRecording(PassCache* recording, bool print) {
  recording->Seal();
  if (print) {
    LogDebug("evaluation batches kept for later epochs: " + std::to_string(recording->batches()) +
             " batches, " + FormatBytes(recording->file_bytes()) + " in a scratch file");
  }
}

// Runs `pass` (its node sets, PassSpec::more, as one pipeline pass when it has several).
Status RunPass(const RunnerState& state, const train::PassSpec& pass,
               const std::function<Status(train::PreparedBatch&)>& consume,
               std::string* report_json) {
  OutOfCore* const ooc = state.ooc;
  // Aggregated input when the model takes it and the budget plan chose it.
  const bool aggregated =
      ooc->aggregated_input() && pass.aggregation != model::InputAggregation::kNone;
  if (!pass.more.empty() && (pass.training || !aggregated)) {
    return RunSetsOneByOne(state, pass, consume, report_json);
  }
  // Explicit batches were cut by the caller, within the plan's evaluation batch size.
  SKIFF_CHECK(pass.batch_numbers == nullptr || pass.training ||
              pass.batch_size <= ooc->eval_batch_size());
  const PassLayout layout = LayoutOf(
      pass, pass.training ? pass.batch_size : std::min(pass.batch_size, ooc->eval_batch_size()));
  const PassParts split = layout.Split();
  SampledAhead& ahead = *state.ahead;
  const SampleGroupFn sample =
      TakingAhead(&ahead, LabelledSampleFn(pass.training ? state.fanouts : state.eval_fanouts,
                                           state.record_degrees, state.labels));
  auto hand_over = [&](PreparedBatch& prepared) {
    return HandOver(prepared, layout.SetOf(split, prepared.index), consume);
  };
  const KeptPassUse use = UseOfKeptPasses(state, pass, layout, aggregated);
  if (use.replay_batches > 0) {
    ahead.Clear();
    return ReplayPass(*use.replay, use.replay_batches, hand_over, report_json, state.print_reports);
  }
  PassCache* recording = use.record;
  auto compute = [&](PreparedBatch& prepared) -> Status {
    if (recording != nullptr) {
      if (const Status kept_status = recording->Append(prepared); !kept_status.ok()) {
        state.kept->GiveUp(pass.stream, kept_status);
        recording = nullptr;
      }
    }
    return hand_over(prepared);
  };
  PassOptions options = OptionsFor(state, pass, layout, aggregated);
  // The evaluation the Trainer runs next (PassSpec::then): its first group is sampled once this
  // pass has sampled its last, while this one reads and computes its last groups.
  int64_t sampled_ahead = 0;
  if (pass.training && aggregated && pass.then != nullptr) {
    options.after_sampling = [&](const std::function<bool(uint64_t)>& hold) {
      return SampleAhead(state, *pass.then, hold, &sampled_ahead);
    };
  }
  Result<EpochReport> ran = ooc->RunPass(layout.nodes(), std::move(options), sample, compute);
  if (!pass.training || !ran.ok()) ahead.Clear();  // what this pass did not take is stale now
  ReleaseFreedMemory();
  SKIFF_ASSIGN_OR_RETURN(EpochReport report, std::move(ran));
  report.disk_bytes_per_second = state.disk_bytes_per_second;
  if (recording != nullptr) SealRecording(recording, state.print_reports);
  ReportPass(report, pass, sampled_ahead, state.print_reports, report_json);
  return Status::Ok();
}

}  // namespace

train::PassRunner MakeOutOfCorePassRunner(OutOfCore* ooc, const std::vector<int32_t>* labels,
                                          std::vector<int> fanouts, std::vector<int> eval_fanouts,
                                          bool record_degrees, uint64_t seed, bool print_reports,
                                          std::string replay_dir, double disk_bytes_per_second) {
  RunnerState state{.ooc = ooc,
                    .labels = labels,
                    .fanouts = std::move(fanouts),
                    .eval_fanouts = std::move(eval_fanouts),
                    .record_degrees = record_degrees,
                    .seed = seed,
                    .print_reports = print_reports,
                    .disk_bytes_per_second = disk_bytes_per_second,
                    .kept = std::make_shared<KeptPasses>(std::move(replay_dir)),
                    .ahead = std::make_shared<SampledAhead>()};
  return [state = std::move(state)](const train::PassSpec& pass,
                                    const std::function<Status(train::PreparedBatch&)>& consume,
                                    std::string* report_json) -> Status {
    return RunPass(state, pass, consume, report_json);
  };
}

train::PassRunner MakeOutOfCorePassRunner(OutOfCoreTraining* training,
                                          const train::TrainOptions& options, bool print_reports) {
  return MakeOutOfCorePassRunner(
      training->ooc.get(), &training->data.labels, options.fanouts, EffectiveEvalFanouts(options),
      model::NeedsNodeDegrees(options.model.kind), options.seed, print_reports,
      training->replay_dir, training->disk_bytes_per_second);
}

void AttachOutOfCore(train::Trainer* trainer, OutOfCoreTraining* training,
                     const train::TrainOptions& options, bool print_reports) {
  trainer->SetPassRunner(MakeOutOfCorePassRunner(training, options, print_reports));
  const MemoryPlan& plan = training->ooc->memory_plan();
  trainer->SetMicroBatches(plan.micro_batches, plan.eval_part_seeds);
  trainer->SetEvalBatchLimit(training->ooc->eval_batch_size());
}

}  // namespace skiff::pipeline
