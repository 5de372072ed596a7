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
#include "skiff/units.h"

namespace skiff::pipeline {

std::vector<int> EffectiveEvalFanouts(const train::TrainOptions& options) {
  if (!options.eval_fanouts.empty()) return options.eval_fanouts;
  return std::vector<int>(options.fanouts.size(), train::kDefaultEvalFanoutCap);
}

Result<std::unique_ptr<OutOfCoreTraining>> OpenOutOfCoreTraining(
    const format::Dataset* dataset, const train::TrainOptions& options, uint64_t memory_bytes,
    SamplingMode sampling, int threads, bool aggregated_input, bool features_on_device) {
  const format::Manifest& m = dataset->manifest();
  // Size the model to budget its parameters, gradients and optimiser state.
  model::ModelConfig config = options.model;
  config.in_dim = m.feature_dim;
  config.num_classes = m.num_classes;
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> sizing, model::Model::CreateCpu(config));

  OutOfCoreOptions o;
  o.memory_bytes = memory_bytes;
  o.sampling = sampling;
  o.batch_size = options.batch_size;
  o.fanouts = options.fanouts;
  // The budget may cut evaluation batches so that they need no more than a training batch.
  o.eval_batch_size = options.eval_batch_size;
  o.eval_fanouts = EffectiveEvalFanouts(options);
  o.model = {.in_dim = m.feature_dim,
             .hidden = config.hidden_dim,
             .num_classes = m.num_classes,
             .heads = config.kind == model::ModelKind::kGat ? std::max(config.heads, 1) : 1,
             .attention = config.kind == model::ModelKind::kGat,
             .num_parameters = sizing->NumParameters()};
  o.normalize_rows = options.feature_norm == train::FeatureNorm::kRow;
  // In-buffer sampling follows the buffer states, which aggregated gathering does not need.
  o.aggregated_input = aggregated_input && sampling == SamplingMode::kExact &&
                       model::InputAggregationOf(config) != model::InputAggregation::kNone;
  o.sample_threads = std::max(1, threads);
  o.features_on_device = features_on_device;
  o.record_degrees = model::NeedsNodeDegrees(config.kind);
  o.gather_threads = 1;
  auto out = std::make_unique<OutOfCoreTraining>();
  SKIFF_ASSIGN_OR_RETURN(out->ooc, OutOfCore::Create(dataset, o));
  out->graph = std::make_unique<DiskGraphSource>(out->ooc->exact_graph());
  out->features = std::make_unique<DiskFeatureSource>(out->ooc->exact_graph());
  train::TrainData& data = out->data;
  data.graph = out->graph.get();
  data.features = out->features.get();
  data.num_classes = m.num_classes;
  SKIFF_ASSIGN_OR_RETURN(data.labels, dataset->LoadLabels());
  SKIFF_ASSIGN_OR_RETURN(data.train, dataset->LoadSplit(format::kTrainFile));
  SKIFF_ASSIGN_OR_RETURN(data.valid, dataset->LoadSplit(format::kValidFile));
  SKIFF_ASSIGN_OR_RETURN(data.test, dataset->LoadSplit(format::kTestFile));
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
    key = Mix64(Mix64(key ^ static_cast<uint64_t>(part.nodes)) ^ part.stream);
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

// What a pass runner holds across passes.
struct RunnerState {
  OutOfCore* ooc = nullptr;
  const std::vector<int32_t>* labels = nullptr;
  std::vector<int> fanouts, eval_fanouts;
  bool record_degrees = false;
  uint64_t seed = 0;
  bool print_reports = false;
  std::shared_ptr<KeptPasses> kept;
};

// Runs `pass` (its node sets, PassSpec::more, as one pipeline pass when it has several).
Status RunPass(const RunnerState& state, const train::PassSpec& pass,
               const std::function<Status(train::PreparedBatch&)>& consume,
               std::string* report_json) {
  OutOfCore* const ooc = state.ooc;
  const std::vector<int32_t>* const labels = state.labels;
  const std::vector<int>& fanouts = state.fanouts;
  const std::vector<int>& eval_fanouts = state.eval_fanouts;
  const bool record_degrees = state.record_degrees;
  const uint64_t seed = state.seed;
  const bool print_reports = state.print_reports;
  KeptPasses* const kept = state.kept.get();
  const int64_t eval_batch_size = ooc->eval_batch_size();
  // Aggregated input when the model takes it and the budget plan chose it.
  const bool aggregated =
      ooc->aggregated_input() && pass.aggregation != model::InputAggregation::kNone;
  if (!pass.more.empty() && (pass.training || !aggregated)) {
    // Node sets share a pass only when they are evaluated aggregated (gather groups then span
    // them); otherwise each runs as its own pass, one after the other.
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
  const int64_t batch_size =
      pass.training ? pass.batch_size : std::min(pass.batch_size, eval_batch_size);
  // The pass's node sets, one after the other, and the first batch of each.
  std::vector<const std::vector<int64_t>*> sets = {pass.nodes};
  std::vector<EpochRunnerOptions::Part> parts;
  for (const train::PassSpec::MoreNodes& more : pass.more) sets.push_back(more.nodes);
  std::vector<int64_t> part_first;
  std::vector<int64_t> all_nodes;
  for (size_t p = 0; p < sets.size(); ++p) {
    part_first.push_back(part_first.empty()
                             ? 0
                             : part_first.back() +
                                   (parts.back().nodes + batch_size - 1) / batch_size);
    parts.push_back(
        {static_cast<int64_t>(sets[p]->size()), p == 0 ? pass.stream : pass.more[p - 1].stream});
    if (sets.size() > 1) all_nodes.insert(all_nodes.end(), sets[p]->begin(), sets[p]->end());
  }
  const std::vector<int64_t>& nodes = sets.size() > 1 ? all_nodes : *pass.nodes;
  const auto part_of = [&](int64_t index) {
    return static_cast<int>(std::upper_bound(part_first.begin(), part_first.end(), index) -
                            part_first.begin() - 1);
  };
  const std::vector<int>& layer_fanouts = pass.training ? fanouts : eval_fanouts;
  // One source for the whole group: its hop-batched reads then cover every batch of the group.
  SampleGroupFn sample = [&](const BatchGraph& view,
                             std::span<const std::span<const int64_t>> seeds,
                             std::span<const uint64_t> rng_seeds,
                             std::span<sampler::MiniBatch* const> batches) -> Status {
    std::vector<int64_t> all_seeds;
    for (const std::span<const int64_t> s : seeds)
      all_seeds.insert(all_seeds.end(), s.begin(), s.end());
    ResidentGraphSource source(view.graph(), view.resident(), all_seeds,
                               static_cast<int>(layer_fanouts.size()));
    sampler::NeighborSampler sampler(source, layer_fanouts, record_degrees);
    SKIFF_RETURN_IF_ERROR(sampler.SampleGroup(seeds, rng_seeds, batches));
    for (sampler::MiniBatch* batch : batches) {
      batch->labels.resize(batch->seeds.size());
      for (size_t i = 0; i < batch->seeds.size(); ++i) {
        batch->labels[i] = labels != nullptr ? (*labels)[batch->seeds[i]] : -1;
      }
    }
    return Status::Ok();
  };
  // Hands a batch to the Trainer's step, and its staging buffer back to the pipeline for reuse.
  auto hand_over = [&](PreparedBatch& prepared) -> Status {
    train::PreparedBatch batch;
    batch.index = prepared.index;
    batch.batch = std::move(prepared.batch);
    batch.features = std::move(prepared.features);
    batch.aggregated = prepared.aggregated;
    batch.part = part_of(prepared.index);
    const Status status = consume(batch);
    prepared.features = std::move(batch.features);
    return status;
  };
  // An evaluation pass gathered aggregated (its batches then depend on the dataset alone):
  // replayed when it was kept, else kept as it runs when it will run again.
  PassCache* recording = nullptr;
  if (!pass.training && pass.gather_features && aggregated) {
    PassCache* cache = kept->Find(pass.stream);
    const uint64_t key = PassKey(nodes, parts, batch_size, pass.epoch);
    const bool held = cache != nullptr && cache->Holds(key);
    // A replay holds its batches within the batches' allowance; a pass whose largest batch does
    // not fit there alone is computed again (and not written again).
    const int room = held ? cache->ReplayBatchesWithin(ooc->memory_plan().batch_allowance) : 0;
    if (room > 0) return ReplayPass(*cache, room, hand_over, report_json, print_reports);
    if (!held && pass.repeats && (cache = kept->For(pass.stream)) != nullptr) {
      cache->Begin(key);
      recording = cache;
    }
  }
  auto compute = [&](PreparedBatch& prepared) -> Status {
    if (recording != nullptr) {
      if (const Status kept_status = recording->Append(prepared); !kept_status.ok()) {
        kept->GiveUp(pass.stream, kept_status);
        recording = nullptr;
      }
    }
    return hand_over(prepared);
  };
  PassOptions options{.batch_size = batch_size,
                      .seed = seed,
                      .stream = pass.stream,
                      .epoch = static_cast<uint64_t>(pass.epoch),
                      .resident_order = {},
                      .aggregation = std::nullopt,
                      .dropout_seed = nullptr,
                      .gather_features = pass.gather_features};
  if (sets.size() > 1) options.parts = parts;
  if (aggregated) {
    options.aggregation = AggregationOptions{
        .kind = pass.aggregation, .dropout = pass.input_dropout, .training = pass.training};
    if (pass.training) options.dropout_seed = pass.dropout_seed;
  }
  if (ooc->fully_resident() || (pass.training && ooc->uniform_training_order()) || aggregated) {
    // The in-memory batch order (train::BatchStream's), so that the same seed draws the
    // same batches whether or not the run is out of core. Evaluation out of core keeps
    // the plan's states -- it does not train, and they read less -- unless it gathers
    // aggregated: then consecutive batches share reads whatever their partitions, and
    // the plan's states would only cut the groups short.
    for (const std::vector<int64_t>* set : sets) {
      for (const auto& batch : train::PlanBatches(*set, batch_size, pass.training, seed,
                                                  static_cast<uint64_t>(pass.epoch))) {
        options.resident_order.insert(options.resident_order.end(), batch.begin(), batch.end());
      }
    }
  }
  Result<EpochReport> ran = ooc->RunPass(nodes, options, sample, compute);
  ReleaseFreedMemory();
  SKIFF_ASSIGN_OR_RETURN(EpochReport report, std::move(ran));
  if (recording != nullptr) {
    recording->Seal();
    if (print_reports) {
      LogDebug("evaluation batches kept for later epochs: " + std::to_string(recording->batches()) +
               " batches, " + FormatBytes(recording->file_bytes()) + " in a scratch file");
    }
  }
  if (report_json != nullptr) *report_json = report.ToJson().dump();
  if (print_reports) {
    if (pass.training) {
      LogInfo(report.Describe());
    } else {
      LogDebug("evaluation " + report.Describe());
    }
  }
  return Status::Ok();
}

}  // namespace

train::PassRunner MakeOutOfCorePassRunner(OutOfCore* ooc, const std::vector<int32_t>* labels,
                                          std::vector<int> fanouts, std::vector<int> eval_fanouts,
                                          bool record_degrees, uint64_t seed, bool print_reports,
                                          std::string replay_dir) {
  RunnerState state{.ooc = ooc,
                    .labels = labels,
                    .fanouts = std::move(fanouts),
                    .eval_fanouts = std::move(eval_fanouts),
                    .record_degrees = record_degrees,
                    .seed = seed,
                    .print_reports = print_reports,
                    .kept = std::make_shared<KeptPasses>(std::move(replay_dir))};
  return [state = std::move(state)](const train::PassSpec& pass,
                                    const std::function<Status(train::PreparedBatch&)>& consume,
                                    std::string* report_json) -> Status {
    return RunPass(state, pass, consume, report_json);
  };
}

train::PassRunner MakeOutOfCorePassRunner(OutOfCoreTraining* training,
                                          const train::TrainOptions& options, bool print_reports) {
  return MakeOutOfCorePassRunner(training->ooc.get(), &training->data.labels, options.fanouts,
                                 EffectiveEvalFanouts(options),
                                 model::NeedsNodeDegrees(options.model.kind), options.seed,
                                 print_reports, training->replay_dir);
}

}  // namespace skiff::pipeline
