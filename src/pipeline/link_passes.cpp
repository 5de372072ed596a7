#include "skiff/pipeline/link_passes.h"

#include <malloc.h>

#include <algorithm>

#include "skiff/log.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/random.h"
#include "skiff/train/step_accumulator.h"
#include "skiff/units.h"

namespace skiff::pipeline {
namespace {

// Seeds of the largest training and evaluation batches (see the header).
int64_t TrainingBatchSeeds(const train::TrainOptions& o) {
  return LinkBatchSeeds(o.batch_size, o.link.negatives);
}
int64_t EvalBatchSeeds(const train::TrainOptions& o, int64_t edges) {
  return 4 * edges + o.link.eval_negatives;
}

// IDs held besides the node splits: the edge split's pairs as loaded (train::ScoredPairs; the
// training pairs only when held, not under a budget), and one training epoch's plan of
// `train_pairs` pairs: each batch's seeds (its pairs' two ends and the shared negatives), held once
// -- the trainer hands them to the runner, whose plan keeps them as its order -- and each
// positive's two int32 rows. Beside them, in 8-byte units, the decoder's loss scratch for one
// training batch (train::TrainingLossScratchBytes). Transient, before a training pass admits its
// first batch (while no batch, and no activation, is held): the order's second copy of the seeds
// while it is built, and released training pairs reloaded for the plan (OpenOutOfCoreLink).
int64_t LinkIds(const train::LinkData& data, const train::TrainOptions& options, int64_t num_nodes,
                int64_t train_pairs) {
  const auto size = [](const std::vector<int64_t>& v) { return static_cast<int64_t>(v.size()); };
  const int64_t pair_ids = size(data.train) + size(data.valid) + size(data.test) +
                           size(data.valid_neg) + size(data.test_neg);
  const int64_t batches =
      (train_pairs + options.batch_size - 1) / std::max<int64_t>(options.batch_size, 1);
  const int64_t scratch = train::TrainingLossScratchBytes(options, num_nodes);
  return pair_ids + 2 * train_pairs + batches * options.link.negatives + train_pairs +
         (scratch + 7) / 8;
}

// IDs (8-byte units) that ranking among the dataset's candidates holds besides the pass it runs
// (train::RankAmongCandidates): the candidates as loaded (of the pairs evaluation scores), and
// while a split is ranked its pairs' ends with their rows, one chunk of `chunk_bytes`, the
// bitmap of needed nodes, two counters per pair and, filtered, a byte per candidate.
int64_t CandidateRankingIds(const train::LinkData& data, const train::TrainOptions& options,
                            int64_t num_nodes, uint64_t chunk_bytes) {
  if (!train::UsesDatasetCandidates(data, options)) return 0;
  const auto held = static_cast<int64_t>(data.valid_cand.size() + data.test_cand.size());
  int64_t pairs = static_cast<int64_t>(std::max(data.valid.size(), data.test.size()) / 2);
  if (options.link.eval_edges > 0) pairs = std::min(pairs, options.link.eval_edges);
  const bool filtered = options.link.ranking == train::Ranking::kFiltered;
  const int64_t bytes = pairs * 2 * (8 + 4 * int64_t{options.link.out_dim}) +
                        static_cast<int64_t>(chunk_bytes) + num_nodes / 8 + 8 * pairs +
                        (filtered ? pairs * data.candidates : 0);
  return held + (bytes + 7) / 8;
}

// Hands a pipeline batch to the trainer's step (train::PreparedBatch), its buffer back after.
Status HandOverLink(PreparedBatch& prepared,
                    const std::function<Status(train::PreparedBatch&)>& consume) {
  train::PreparedBatch batch;
  batch.index = prepared.index;
  batch.batch = std::move(prepared.batch);
  batch.features = std::move(prepared.features);
  batch.aggregated = prepared.aggregated;
  batch.sample_seed = prepared.sample_seed;
  const Status status = consume(batch);
  prepared.features = std::move(batch.features);
  return status;
}

struct LinkRunnerState {
  OutOfCore* ooc = nullptr;
  std::vector<int> fanouts, eval_fanouts;
  bool record_degrees = false;
  uint64_t seed = 0;
  bool print_reports = false;
  double disk_bytes_per_second = 0;
};

Status RunLinkPass(const LinkRunnerState& state, train::LinkPassSpec pass,
                   const std::function<Status(train::PreparedBatch&)>& consume,
                   std::string* report_json) {
  SKIFF_ASSIGN_OR_RETURN(PassOptions options,
                         LinkPassOptions(state.seed, pass.stream, static_cast<uint64_t>(pass.epoch),
                                         std::move(pass.seeds), pass.batch_numbers));
  options.gather_features = pass.gather_features;
  if (state.ooc->aggregated_input() && pass.aggregation != model::InputAggregation::kNone) {
    options.aggregation = AggregationOptions{
        .kind = pass.aggregation, .dropout = pass.input_dropout, .training = pass.training};
    if (pass.training) options.dropout_seed = pass.dropout_seed;
  }
  const SampleGroupFn sample = LabelledSampleFn(pass.training ? state.fanouts : state.eval_fanouts,
                                                state.record_degrees, nullptr);
  auto compute = [&](PreparedBatch& prepared) { return HandOverLink(prepared, consume); };
  // The pass's nodes are its order's, which the plan keeps (no copy of the epoch's seeds).
  Result<EpochReport> ran = state.ooc->RunPass({}, std::move(options), sample, compute);
  ::malloc_trim(0);  // one pass's freed heap does not raise the next one's peak
  SKIFF_ASSIGN_OR_RETURN(EpochReport report, std::move(ran));
  report.disk_bytes_per_second = state.disk_bytes_per_second;
  if (report_json != nullptr) *report_json = report.ToJson().dump();
  if (state.print_reports) {
    if (pass.training) {
      LogInfo(report.Describe());
    } else {
      LogDebug("evaluation " + report.Describe());
    }
  }
  return Status::Ok();
}

}  // namespace

int64_t LinkBatchSeeds(int64_t batch_edges, int negatives) { return 2 * batch_edges + negatives; }

uint64_t LinkPartStream(uint64_t stream, uint64_t batch) {
  return HashKey(stream, 0x4c494e4b, batch);
}

Result<PassOptions> LinkPassOptions(uint64_t seed, uint64_t stream, uint64_t epoch,
                                    std::vector<std::vector<int64_t>> seeds,
                                    std::span<const uint64_t> batch_numbers) {
  SKIFF_CHECK(batch_numbers.empty() || batch_numbers.size() == seeds.size());
  PassOptions options;
  options.seed = seed;
  options.stream = stream;
  options.epoch = epoch;
  // One part per batch: each is cut whole (batch_size >= every batch) and sampled with its own
  // stream, so batch b's sampler seed depends on (seed, stream, epoch, b) alone (b: its number).
  int64_t largest = 1;
  size_t total = 0;
  for (const auto& batch : seeds) {
    largest = std::max(largest, static_cast<int64_t>(batch.size()));
    total += batch.size();
  }
  options.batch_size = largest;
  options.resident_order.reserve(total);
  options.parts.reserve(seeds.size());
  for (size_t b = 0; b < seeds.size(); ++b) {
    if (seeds[b].empty()) return Status::InvalidArgument("a link batch without nodes");
    options.resident_order.insert(options.resident_order.end(), seeds[b].begin(), seeds[b].end());
    const uint64_t number = batch_numbers.empty() ? b : batch_numbers[b];
    options.parts.push_back(
        {static_cast<int64_t>(seeds[b].size()), LinkPartStream(stream, number)});
    seeds[b] = {};  // one copy of the pass's seeds once the order holds them
  }
  seeds = {};
  ::malloc_trim(0);  // the batches' small vectors do not stay resident beside the order
  return options;
}

Result<std::unique_ptr<OutOfCoreLink>> OpenOutOfCoreLink(const format::Dataset* dataset,
                                                         const train::TrainOptions& options,
                                                         uint64_t memory_bytes,
                                                         SamplingMode sampling, int threads,
                                                         bool cpu_model) {
  const format::Manifest& m = dataset->manifest();
  if (m.feature_dim <= 0) {
    return Status::InvalidArgument("dataset " + dataset->dir() +
                                   " has no node features (feature_dim 0): training needs them "
                                   "(skiff convert --features)");
  }
  auto out = std::make_unique<OutOfCoreLink>();
  // Only what evaluation scores is read: under a budget the rest would pass it before the plan.
  SKIFF_RETURN_IF_ERROR(train::LoadEdgeSplit(*dataset, &out->data, train::ScoredPairs(options)));
  model::ModelConfig config = options.model;
  config.in_dim = m.feature_dim;
  config.num_classes = options.link.out_dim;
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> sizing, model::Model::CreateCpu(config));

  OutOfCoreOptions o;
  o.memory_bytes = memory_bytes;
  o.sampling = sampling;
  o.batch_size = TrainingBatchSeeds(options);
  o.fanouts = options.fanouts;
  o.eval_batch_size = EvalBatchSeeds(options, options.batch_size);
  o.eval_fanouts = EffectiveEvalFanouts(options);
  o.model = {.in_dim = m.feature_dim,
             .hidden = config.hidden_dim,
             .num_classes = options.link.out_dim,
             .heads = config.kind == model::ModelKind::kGat ? std::max(config.heads, 1) : 1,
             .attention = config.kind == model::ModelKind::kGat,
             .activation_in_place = model::ActivatesInPlace(config),
             .num_parameters = sizing->NumParameters(),
             .gradient_sums = train::StepGradientCopies(options.accumulate, options.world_size)};
  // Under a budget the training pairs are not held: each epoch's plan reloads them (checksums
  // verified), and its pass holds the plan alone. In memory they stay.
  const auto train_pairs = static_cast<int64_t>(out->data.train.size() / 2);
  if (memory_bytes > 0) {
    out->data.train = {};
    out->data.reload_train = [dataset] { return dataset->LoadEdgePairs(format::kLinkTrainFile); };
  }
  // Under a budget the candidates are ranked a chunk of representations at a time (no larger
  // than every node's).
  const uint64_t every_row =
      static_cast<uint64_t>(m.num_nodes) * (4 * static_cast<uint64_t>(options.link.out_dim) + 8);
  out->candidate_chunk_bytes =
      memory_bytes > 0 ? std::min(kBudgetedCandidateChunkBytes, every_row) : 0;
  o.extra_ids = LinkIds(out->data, options, m.num_nodes, train_pairs) +
                CandidateRankingIds(out->data, options, m.num_nodes, out->candidate_chunk_bytes);
  o.node_labels = false;
  o.normalize_rows = options.feature_norm == train::FeatureNorm::kRow;
  // GraphSAGE on the CPU takes its first layer's input aggregated as it is read (docs/pipeline.md).
  o.aggregated_input = cpu_model && sampling == SamplingMode::kExact &&
                       model::InputAggregationOf(config) != model::InputAggregation::kNone;
  o.sample_threads = std::max(1, threads);
  o.record_degrees = model::NeedsNodeDegrees(config.kind);
  SKIFF_ASSIGN_OR_RETURN(out->ooc, OutOfCore::Create(dataset, o));
  // Evaluation batches within what the budget allows a batch.
  const int64_t allowed = out->ooc->eval_batch_size();
  out->eval_batch_edges = std::min(options.batch_size, (allowed - options.link.eval_negatives) / 4);
  if (out->eval_batch_edges < 1 && memory_bytes == 0) {
    // In memory no budget binds, but evaluation batches are cut to a training batch's memory,
    // which with wide evaluation fanouts leaves no room beside the candidates: take as many seeds
    // as a training batch has instead (at least one held-out edge).
    const int64_t seeds = LinkBatchSeeds(options.batch_size, options.link.negatives);
    out->eval_batch_edges =
        std::clamp<int64_t>((seeds - options.link.eval_negatives) / 4, 1, options.batch_size);
  }
  if (out->eval_batch_edges < 1) {
    return Status::ResourceExhausted(
        "--memory " + FormatBytes(memory_bytes) + " leaves room for evaluation batches of " +
        std::to_string(allowed) + " nodes, fewer than --eval-negatives " +
        std::to_string(options.link.eval_negatives) +
        " candidates and one held-out edge: "
        "lower --eval-negatives or raise --memory");
  }
  out->graph = std::make_unique<DiskGraphSource>(out->ooc->exact_graph());
  out->features = std::make_unique<DiskFeatureSource>(out->ooc->exact_graph());
  out->csr = std::make_unique<sampler::DatasetCsr>(*dataset);
  out->data.graph = out->graph.get();
  out->data.features = out->features.get();
  out->data.csr = out->csr.get();
  return out;
}

train::LinkPassRunner MakeOutOfCoreLinkRunner(OutOfCoreLink* link,
                                              const train::TrainOptions& options,
                                              bool print_reports) {
  LinkRunnerState state{.ooc = link->ooc.get(),
                        .fanouts = options.fanouts,
                        .eval_fanouts = EffectiveEvalFanouts(options),
                        .record_degrees = model::NeedsNodeDegrees(options.model.kind),
                        .seed = options.seed,
                        .print_reports = print_reports,
                        .disk_bytes_per_second = link->disk_bytes_per_second};
  return [state = std::move(state)](train::LinkPassSpec pass,
                                    const std::function<Status(train::PreparedBatch&)>& consume,
                                    std::string* report_json) {
    return RunLinkPass(state, std::move(pass), consume, report_json);
  };
}

}  // namespace skiff::pipeline
