#include "skiff/train/link_trainer.h"
#include "skiff/format/content_checks.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "skiff/log.h"
#include "skiff/process.h"
#include "skiff/progress.h"
#include "skiff/random.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/batch_stream.h"
#include "skiff/train/candidate_ranking.h"
#include "skiff/train/metrics_file.h"
#include "skiff/units.h"

namespace skiff::train {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6f", v);
  return buf;
}

// InvalidArgument unless every node of `pairs` (interleaved) lies in [0, num_nodes).
Status CheckPairs(std::span<const int64_t> pairs, int64_t num_nodes, const char* what) {
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i] < 0 || pairs[i] >= num_nodes) {
      return Status::InvalidArgument(std::string(what) + " edge " + std::to_string(i / 2) +
                                     " has node " + std::to_string(pairs[i]) + " outside [0, " +
                                     std::to_string(num_nodes) + ")");
    }
  }
  return Status::Ok();
}

uint64_t PairKey(int64_t s, int64_t d, int64_t num_nodes) {
  return static_cast<uint64_t>(s) * static_cast<uint64_t>(num_nodes) + static_cast<uint64_t>(d);
}

void LogEpoch(const LinkEpochMetrics& m, bool improved) {
  auto split = [](const LinkEvaluation& e) {
    char buf[160];
    if (e.ranking.count > 0 && e.has_non_edges) {
      std::snprintf(buf, sizeof(buf), "AUC %.2f%% AP %.2f%% MRR %.4f", 100 * e.auc, 100 * e.ap,
                    e.ranking.mrr);
    } else if (e.ranking.count > 0) {
      std::snprintf(buf, sizeof(buf), "MRR %.4f Hits@10 %.2f%%", e.ranking.mrr,
                    100 * e.ranking.hits[1]);
    } else {
      std::snprintf(buf, sizeof(buf), "AUC %.2f%% AP %.2f%%", 100 * e.auc, 100 * e.ap);
    }
    return std::string(buf);
  };
  char line[512];
  std::snprintf(
      line, sizeof(line), "epoch %lld: loss %.4f  valid %s  test %s  %.2fs (%.0f edges/s)%s",
      static_cast<long long>(m.epoch), m.loss, split(m.valid).c_str(), split(m.test).c_str(),
      m.epoch_seconds, m.edges_per_second, improved ? "  *best" : "");
  LogInfo(line);
}

// A training batch's most nodes: its positives' two ends and the negatives, at most every node.
int64_t MaxBatchRows(const TrainOptions& options, int64_t num_nodes) {
  return std::min(num_nodes, 2 * options.batch_size + options.link.negatives);
}

}  // namespace

// The gae loss scores every pair of a batch's nodes: batches whose scratch alone would exceed the
// machine's memory are refused rather than failing to allocate it (LossScratchBytes saturates, so
// any batch size compares).
Status CheckLinkLoss(const TrainOptions& options, int64_t num_nodes) {
  SKIFF_RETURN_IF_ERROR(model::CheckLossFor(options.link.decoder, options.link.loss));
  if (options.link.loss != model::LinkLoss::kGae) return Status::Ok();
  const uint64_t physical = PhysicalMemoryBytes();
  if (TrainingLossScratchBytes(options, num_nodes) <= static_cast<int64_t>(physical)) {
    return Status::Ok();
  }
  const int64_t rows = MaxBatchRows(options, num_nodes);
  return Status::InvalidArgument("--link-loss gae scores every pair of a batch's up to " +
                                 std::to_string(rows) + " nodes, more than this machine's " +
                                 FormatBytes(physical) +
                                 " of memory holds; lower --batch-size or --negatives");
}

model::DecoderConfig DecoderConfigOf(const TrainOptions& options) {
  model::DecoderConfig config;
  config.kind = options.link.decoder;
  config.dim = options.link.out_dim;
  config.hidden_dim = options.model.hidden_dim;
  config.seed = options.seed;
  return config;
}

int64_t TrainingLossScratchBytes(const TrainOptions& options, int64_t num_nodes) {
  return model::LossScratchBytes(DecoderConfigOf(options), options.link.loss,
                                 MaxBatchRows(options, num_nodes), options.batch_size,
                                 options.link.negatives);
}

int64_t ScoredPairs(const TrainOptions& options) {
  const int64_t edges = options.link.eval_edges;
  return edges > 0 && options.link.ranking == Ranking::kRaw ? edges : -1;
}

Status LoadEdgeSplit(const format::Dataset& dataset, LinkData* d, int64_t held_out_pairs) {
  const auto& split = dataset.manifest().link_split;
  if (!split.has_value()) {
    return Status::InvalidArgument(
        dataset.dir() +
        " has no edge split for link prediction: make one with `skiff convert ... --split-edges "
        "0.85,0.05,0.1` (docs/training.md, \"Link prediction\")");
  }
  d->undirected = dataset.manifest().undirected;
  SKIFF_ASSIGN_OR_RETURN(d->train, dataset.LoadEdgePairs(format::kLinkTrainFile));
  SKIFF_ASSIGN_OR_RETURN(d->valid, dataset.LoadEdgePairs(format::kLinkValidFile, held_out_pairs));
  SKIFF_ASSIGN_OR_RETURN(d->test, dataset.LoadEdgePairs(format::kLinkTestFile, held_out_pairs));
  // A pair in two splits would be trained on and scored as held out.
  const std::vector<int64_t>* positives[] = {&d->train, &d->valid, &d->test};
  const char* names[] = {format::kLinkTrainFile, format::kLinkValidFile, format::kLinkTestFile};
  SKIFF_RETURN_IF_ERROR(
      format::CheckEdgeSplitDisjoint(dataset.dir(), d->undirected, positives, names));
  d->valid_neg.clear();
  d->test_neg.clear();
  if (split->valid_neg > 0) {
    SKIFF_ASSIGN_OR_RETURN(d->valid_neg,
                           dataset.LoadEdgePairs(format::kLinkValidNegFile, held_out_pairs));
  }
  if (split->test_neg > 0) {
    SKIFF_ASSIGN_OR_RETURN(d->test_neg,
                           dataset.LoadEdgePairs(format::kLinkTestNegFile, held_out_pairs));
  }
  d->candidates = split->candidates;
  SKIFF_ASSIGN_OR_RETURN(d->valid_cand,
                         dataset.LoadCandidates(format::kLinkValidCandFile, held_out_pairs));
  SKIFF_ASSIGN_OR_RETURN(d->test_cand,
                         dataset.LoadCandidates(format::kLinkTestCandFile, held_out_pairs));
  return Status::Ok();
}

void DropUnscoredPairs(const TrainOptions& options, LinkData* data) {
  const int64_t edges = ScoredPairs(options);
  if (edges < 0) return;
  for (std::vector<int64_t>* pairs :
       {&data->valid, &data->test, &data->valid_neg, &data->test_neg}) {
    if (static_cast<int64_t>(pairs->size()) <= 2 * edges) continue;
    pairs->resize(static_cast<size_t>(2 * edges));  // Evaluate scores the first `edges`
    pairs->shrink_to_fit();
  }
  for (std::vector<int64_t>* rows : {&data->valid_cand, &data->test_cand}) {
    const auto kept = static_cast<size_t>(edges * data->candidates);
    if (rows->size() <= kept) continue;
    rows->resize(kept);  // the candidates of the pairs kept
    rows->shrink_to_fit();
  }
}

Result<std::span<const int64_t>> TrainPairsOf(const LinkData& data, std::vector<int64_t>* held) {
  if (!data.reload_train) return std::span<const int64_t>(data.train);
  SKIFF_ASSIGN_OR_RETURN(*held, data.reload_train());
  return std::span<const int64_t>(*held);
}

std::string LinkEvaluation::JsonMembers(const std::string& prefix) const {
  std::string out = "\"" + prefix + "edges\": " + std::to_string(edges);
  if (has_non_edges) {
    out += ", \"" + prefix + "auc\": " + Fixed(auc) + ", \"" + prefix + "ap\": " + Fixed(ap);
    for (size_t k = 0; k < kSharedHitsAt.size(); ++k) {
      out += ", \"" + prefix + "neg_hits@" + std::to_string(kSharedHitsAt[k]) +
             "\": " + Fixed(shared_hits[k]);
    }
  }
  if (ranking.count > 0) out += ", " + ranking.JsonMembers(prefix);
  return out;
}

std::string LinkEpochMetrics::ToJson() const {
  std::string out = "{\"epoch\": " + std::to_string(epoch) + ", \"loss\": " + Fixed(loss) + ", " +
                    valid.JsonMembers("valid_") + ", " + test.JsonMembers("test_") +
                    ", \"epoch_seconds\": " + Fixed(epoch_seconds) +
                    ", \"edges_per_second\": " + Fixed(edges_per_second) +
                    ", \"compute_busy_seconds\": " + Fixed(compute_seconds) +
                    ", \"eval_seconds\": " + Fixed(eval_seconds);
  if (!pipeline_json.empty()) out += ", \"pipeline\": " + pipeline_json;
  return out + "}";
}

Result<std::unique_ptr<LinkTrainer>> LinkTrainer::Create(const LinkData& data, TrainOptions options,
                                                         ModelFactory factory) {
  if (data.graph == nullptr || data.features == nullptr) {
    return Status::InvalidArgument("link prediction needs a graph and a feature source");
  }
  const int64_t n = data.graph->num_nodes();
  if (n >= (int64_t{1} << 31)) {
    return Status::InvalidArgument("link prediction takes graphs of fewer than 2^31 nodes");
  }
  std::vector<int64_t> held;  // the training pairs when reloaded, freed on return
  SKIFF_ASSIGN_OR_RETURN(const std::span<const int64_t> train, TrainPairsOf(data, &held));
  if (train.empty()) return Status::InvalidArgument("the edge split has no training edges");
  SKIFF_RETURN_IF_ERROR(CheckPairs(train, n, "training"));
  SKIFF_RETURN_IF_ERROR(CheckPairs(data.valid, n, "validation"));
  SKIFF_RETURN_IF_ERROR(CheckPairs(data.test, n, "test"));
  SKIFF_RETURN_IF_ERROR(CheckPairs(data.valid_neg, n, "validation non-"));
  SKIFF_RETURN_IF_ERROR(CheckPairs(data.test_neg, n, "test non-"));
  if (static_cast<int>(options.fanouts.size()) != options.model.num_layers) {
    return Status::InvalidArgument(
        "--fanouts " + sampler::FanoutsToString(options.fanouts) + " has " +
        std::to_string(options.fanouts.size()) + " entries but the model has " +
        std::to_string(options.model.num_layers) + " layers (one fanout per layer)");
  }
  if (options.eval_fanouts.empty()) {
    options.eval_fanouts.assign(options.fanouts.size(), kDefaultEvalFanoutCap);
  }
  if (options.eval_fanouts.size() != options.fanouts.size()) {
    return Status::InvalidArgument("--eval-fanouts needs one entry per layer");
  }
  if (options.epoch_fraction < 1) {
    return Status::InvalidArgument(
        "--epoch-fraction trains node classification on subsets of its training nodes; link "
        "prediction trains on every training edge each epoch");
  }
  if (options.batch_size <= 0 || options.epochs < 0) {
    return Status::InvalidArgument("the batch size must be positive and epochs non-negative");
  }
  if (options.accumulate < 1) return Status::InvalidArgument("--accumulate must be >= 1");
  if (options.link.negatives < 1 || options.link.out_dim < 1 || options.link.eval_negatives < 0 ||
      options.link.eval_edges < 0) {
    return Status::InvalidArgument(
        "--negatives and --out-dim must be positive, --eval-negatives and --eval-edges >= 0");
  }
  if (options.link.negative_sampler == NegativeSampler::kDegree && data.csr == nullptr) {
    return Status::InvalidArgument("--negative-sampler degree needs the graph's CSR");
  }
  SKIFF_RETURN_IF_ERROR(CheckLinkLoss(options, data.graph->num_nodes()));
  SKIFF_RETURN_IF_ERROR(model::Optimizer::ValidateConfig(options.optimizer));
  options.model.in_dim = data.features->dim();
  options.model.num_classes = options.link.out_dim;
  options.model.seed = options.seed;
  std::unique_ptr<LinkTrainer> t(new LinkTrainer(data, std::move(options)));
  const TrainOptions& o = t->options_;
  if (!factory) factory = model::Model::CreateCpu;
  SKIFF_ASSIGN_OR_RETURN(t->model_, factory(o.model));
  t->optimizer_ = std::make_unique<model::Optimizer>(*t->model_, o.optimizer);
  SKIFF_ASSIGN_OR_RETURN(t->decoder_, model::LinkDecoder::Create(DecoderConfigOf(o)));
  for (const model::Parameter& p : t->decoder_->Parameters()) {
    for (int s = 0; s < model::OptimizerStateSlots(o.optimizer); ++s) {
      t->decoder_state_.emplace_back(static_cast<size_t>(p.size()), 0.0f);
    }
  }
  const bool degrees = model::NeedsNodeDegrees(o.model.kind);
  t->train_sampler_ = std::make_unique<sampler::NeighborSampler>(*data.graph, o.fanouts, degrees);
  t->eval_sampler_ =
      std::make_unique<sampler::NeighborSampler>(*data.graph, o.eval_fanouts, degrees);
  if (o.link.ranking == Ranking::kFiltered) {
    for (const std::span<const int64_t> pairs :
         {train, std::span<const int64_t>(data.valid), std::span<const int64_t>(data.test)}) {
      for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        t->split_edges_.push_back(PairKey(pairs[i], pairs[i + 1], n));
      }
    }
    std::sort(t->split_edges_.begin(), t->split_edges_.end());
  }
  return t;
}

Result<bool> LinkTrainer::OfferFeatures(uint64_t device_bytes) {
  if (model_->holds_features()) return true;
  SKIFF_ASSIGN_OR_RETURN(const bool held, model_->HoldFeatures(*data_.features, device_bytes));
  if (held) LogInfo("features held in device memory: batches carry node IDs only");
  return held;
}

Status LinkTrainer::RunPass(LinkPassSpec pass, const std::function<Status(PreparedBatch&)>& consume,
                            std::string* report_json) {
  if (runner_) return runner_(std::move(pass), consume, report_json);
  BatchStreamOptions so;
  so.threads = options_.sampler_threads;
  so.capacity = options_.prefetch_batches;
  so.seed = options_.seed;
  so.stream = pass.stream;
  so.epoch = static_cast<uint64_t>(pass.epoch);
  so.batch_numbers = pass.batch_numbers;
  so.gather_features = pass.gather_features;
  BatchStream stream(pass.training ? *train_sampler_ : *eval_sampler_, *data_.features, nullptr,
                     pass.seeds, so);
  while (true) {
    SKIFF_ASSIGN_OR_RETURN(auto next, stream.Next());
    if (!next.has_value()) break;
    SKIFF_RETURN_IF_ERROR(consume(*next));
    stream.Recycle(std::move(*next));
  }
  return Status::Ok();
}

LinkPassSpec LinkTrainer::MakePass(bool training, uint64_t stream, int64_t epoch) const {
  LinkPassSpec pass;
  pass.training = training;
  pass.stream = stream;
  pass.epoch = epoch;
  pass.gather_features = !model_->holds_features();
  if (pass.gather_features && model_->accepts_aggregated_input()) {
    pass.aggregation = model::InputAggregationOf(model_->config());
    if (training) {
      pass.input_dropout = model::FirstLayerDropout(model_->config());
      const uint64_t seed = options_.seed;
      pass.dropout_seed = [seed, epoch](int64_t b) {
        return sampler::BatchSeed(seed, kDropoutStream, static_cast<uint64_t>(epoch),
                                  static_cast<uint64_t>(b));
      };
    }
  }
  return pass;
}

Status LinkTrainer::ForwardPrepared(const PreparedBatch& prepared, bool training,
                                    uint64_t dropout_seed) {
  model::BatchInput input{.batch = &prepared.batch, .x = prepared.features.data()};
  if (prepared.features.empty() && model_->holds_features()) {
    input.x = nullptr;  // the model gathers the rows from its device
    return model_->ForwardInput(input, training, dropout_seed, &step_out_);
  }
  if (prepared.aggregated) {
    SKIFF_CHECK(!prepared.batch.blocks.empty());
    const auto rows =
        static_cast<size_t>(prepared.batch.blocks[0].num_dst * model_->config().in_dim);
    SKIFF_CHECK(prepared.features.size() == 2 * rows);
    input.aggregated = prepared.features.data() + rows;
  }
  return model_->ForwardInput(input, training, dropout_seed, &step_out_);
}

Result<double> LinkTrainer::ComputeGradients(const PreparedBatch& prepared, const EdgeBatch& edges,
                                             int64_t rows, uint64_t dropout_seed) {
  SKIFF_CHECK(static_cast<int64_t>(prepared.batch.seeds.size()) == rows);
  model_->ZeroGrad();
  SKIFF_RETURN_IF_ERROR(ForwardPrepared(prepared, /*training=*/true, dropout_seed));
  SKIFF_CHECK(static_cast<int64_t>(step_out_.size()) == rows * options_.link.out_dim);
  step_grad_.resize(step_out_.size());
  decoder_->ZeroGrad();
  const model::EdgeBatchRows batch{edges.pos_src, edges.pos_dst, edges.neg_dst};
  SKIFF_ASSIGN_OR_RETURN(
      const model::LinkLossResult loss,
      decoder_->LossAndGrad(step_out_.data(), rows, batch, options_.link.loss, step_grad_.data()));
  SKIFF_RETURN_IF_ERROR(model_->Backward(step_grad_.data()));
  return loss.loss;
}

Status LinkTrainer::ApplyUpdate() {
  SKIFF_RETURN_IF_ERROR(optimizer_->Step());
  model::UpdateOnHost(options_.optimizer, ++decoder_steps_, decoder_->Parameters(), decoder_state_);
  return Status::Ok();
}

Status LinkTrainer::SetCommunicator(dist::Communicator* comm) {
  SKIFF_RETURN_IF_ERROR(CheckWorldSize(options_.world_size, comm));
  comm_ = comm;
  return Status::Ok();
}

std::vector<model::Parameter> LinkTrainer::AllParameters() {
  std::vector<model::Parameter> all = model_->Parameters();
  for (model::Parameter& p : decoder_->Parameters()) all.push_back(std::move(p));
  return all;
}

StepAccumulator& LinkTrainer::Steps() {
  if (steps_ == nullptr) {
    int64_t values = 0;
    for (const model::Parameter& p : AllParameters()) values += p.size();
    steps_ = std::make_unique<StepAccumulator>(
        Distributed() ? StepAccumulator::Kind::kReplicated : StepAccumulator::Kind::kOneProcess,
        values, options_.accumulate, comm_,
        StepAccumulator::Hooks{.params = [this] { return AllParameters(); },
                               .update = [this] { return ApplyUpdate(); }});
  }
  return *steps_;
}

Result<LinkEpochMetrics> LinkTrainer::TrainEpoch(int64_t epoch) {
  const auto start = Clock::now();
  std::vector<int64_t> held;  // the training pairs when reloaded, freed once planned
  SKIFF_ASSIGN_OR_RETURN(const std::span<const int64_t> train, TrainPairsOf(data_, &held));
  const auto pairs = static_cast<int64_t>(train.size() / 2);
  const EdgePassOptions plan_options{
      .batch_size = options_.batch_size,
      .shuffle = true,
      .seed = options_.seed,
      .negative_seed = options_.seed,
      .epoch = static_cast<uint64_t>(epoch),
      .reorient = data_.undirected,
      .negatives = {options_.link.negatives, options_.link.negative_sampler,
                    data_.graph->num_nodes(), data_.csr}};
  SKIFF_ASSIGN_OR_RETURN(EdgePass plan, PlanEdgePass(train, plan_options));
  plan.pair_ids = {};  // the batches' rows say all a step needs
  held = {};
  std::vector<EdgeBatch>& batches = plan.batches;
  const auto num_batches = static_cast<int64_t>(batches.size());
  LinkPassSpec pass = MakePass(/*training=*/true, kTrainStream, epoch);
  // This process's batches: every one, or a rank's share (r, r + W, ...) with its plan numbers.
  const int rank = comm_ == nullptr ? 0 : comm_->rank();
  const int ranks = comm_ == nullptr ? 1 : comm_->size();
  std::vector<int64_t> numbers;  // per batch of the pass: its number in the plan
  for (int64_t b = rank; b < num_batches; b += ranks) numbers.push_back(b);
  if (Distributed()) {
    pass.batch_numbers.assign(numbers.begin(), numbers.end());
    if (pass.dropout_seed) {
      pass.dropout_seed = [seed = pass.dropout_seed, &numbers](int64_t i) {
        return seed(numbers[static_cast<size_t>(i)]);
      };
    }
  }
  const std::function<uint64_t(int64_t)> dropout_seed = pass.dropout_seed;
  std::vector<int64_t> seed_counts;  // per batch of the pass: its seeds, which go to the runner
  seed_counts.reserve(numbers.size());
  pass.seeds.reserve(numbers.size());
  uint64_t own_pairs = 0;
  for (int64_t b : numbers) {
    EdgeBatch& batch = batches[static_cast<size_t>(b)];
    seed_counts.push_back(static_cast<int64_t>(batch.seeds.size()));
    pass.seeds.push_back(std::move(batch.seeds));  // the epoch's plan: one copy, the runner's
    own_pairs += batch.pos_src.size();
  }
  OptionalProgress progress(options_.show_progress, "epoch " + std::to_string(epoch), own_pairs,
                            "edges");
  LinkEpochMetrics m;
  m.epoch = epoch;
  double loss_sum = 0;
  if (StepBatches() > 1) Steps().BeginPass(num_batches);
  auto consume = [&](PreparedBatch& next) -> Status {
    const auto i = static_cast<size_t>(next.index);
    const int64_t b = numbers[i];
    const EdgeBatch& edges = batches[static_cast<size_t>(b)];
    const uint64_t batch_dropout_seed =
        dropout_seed ? dropout_seed(next.index)
                     : sampler::BatchSeed(options_.seed, kDropoutStream,
                                          static_cast<uint64_t>(epoch), static_cast<uint64_t>(b));
    const auto compute_start = Clock::now();
    SKIFF_ASSIGN_OR_RETURN(const double loss,
                           ComputeGradients(next, edges, seed_counts[i], batch_dropout_seed));
    if (StepBatches() == 1) {
      SKIFF_RETURN_IF_ERROR(ApplyUpdate());
    } else {
      SKIFF_RETURN_IF_ERROR(Steps().Add(b));
    }
    m.compute_seconds += SecondsSince(compute_start);
    if (!std::isfinite(loss)) {
      return Status::InvalidArgument(
          "epoch " + std::to_string(epoch) + ": the training loss is " + std::to_string(loss) +
          ": training diverged; lower --lr, or check the features for NaN or Inf values");
    }
    loss_sum += loss;
    progress.Add(edges.pos_src.size());
    return Status::Ok();
  };
  SKIFF_RETURN_IF_ERROR(RunPass(std::move(pass), consume, &m.pipeline_json));
  if (StepBatches() > 1) SKIFF_RETURN_IF_ERROR(Steps().EndPass());
  if (Distributed()) {
    SKIFF_RETURN_IF_ERROR(comm_->AllReduceSum(std::span<double>(&loss_sum, 1), "loss totals"));
  }
  progress.Finish();
  m.loss = batches.empty() ? 0 : loss_sum / static_cast<double>(batches.size());
  m.epoch_seconds = SecondsSince(start);
  m.edges_per_second = m.epoch_seconds > 0 ? static_cast<double>(pairs) / m.epoch_seconds : 0;
  return m;
}

bool LinkTrainer::KnownEdge(int64_t s, int64_t c, const std::vector<int64_t>& row) const {
  if (std::binary_search(row.begin(), row.end(), c)) return true;
  const int64_t n = data_.graph->num_nodes();
  if (std::binary_search(split_edges_.begin(), split_edges_.end(), PairKey(s, c, n))) return true;
  return data_.undirected &&
         std::binary_search(split_edges_.begin(), split_edges_.end(), PairKey(c, s, n));
}

// The scores of a split's evaluation, gathered over its batches.
struct LinkTrainer::SplitScores {
  std::vector<float> positives, non_edges;  // AUC / AP
  RankingAccumulator ranks;
};

Status LinkTrainer::ScoreEvalBatch(const PreparedBatch& prepared, const EvalEdgeBatch& batch,
                                   SplitScores* scores) {
  const EdgeBatch& e = batch.edges;
  SKIFF_CHECK(prepared.batch.seeds == e.seeds);
  SKIFF_RETURN_IF_ERROR(ForwardPrepared(prepared, /*training=*/false, 0));
  const auto rows = static_cast<int64_t>(e.seeds.size());
  std::vector<float> pos, other;
  SKIFF_RETURN_IF_ERROR(decoder_->ScorePairs(step_out_.data(), rows, e.pos_src, e.pos_dst, &pos));
  scores->positives.insert(scores->positives.end(), pos.begin(), pos.end());
  if (!batch.non_src.empty()) {
    SKIFF_RETURN_IF_ERROR(
        decoder_->ScorePairs(step_out_.data(), rows, batch.non_src, batch.non_dst, &other));
    scores->non_edges.insert(scores->non_edges.end(), other.begin(), other.end());
  }
  if (e.neg_dst.empty()) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(decoder_->ScoreCross(step_out_.data(), rows, e.pos_src, e.neg_dst, &other));
  const size_t k = e.neg_dst.size();
  std::vector<int64_t> candidate_nodes(k);
  for (size_t j = 0; j < k; ++j) candidate_nodes[j] = e.seeds[static_cast<size_t>(e.neg_dst[j])];
  for (size_t i = 0; i < e.pos_src.size(); ++i) {
    const int64_t s = e.seeds[static_cast<size_t>(e.pos_src[i])];
    SKIFF_RETURN_IF_ERROR(AddRank(s, pos[i], std::span<const float>(other.data() + i * k, k),
                                  candidate_nodes, &scores->ranks));
  }
  return Status::Ok();
}

Result<LinkEvaluation> LinkTrainer::Evaluate(const std::vector<int64_t>& pairs,
                                             const std::vector<int64_t>& non_edges, uint64_t stream,
                                             const std::vector<int64_t>& candidates) {
  LinkEvaluation out;
  const bool given = UsesDatasetCandidates();
  int64_t count = static_cast<int64_t>(pairs.size() / 2);
  if (options_.link.eval_edges > 0) count = std::min(count, options_.link.eval_edges);
  const int64_t non_count =
      std::min(static_cast<int64_t>(non_edges.size() / 2),
               options_.link.eval_edges > 0 ? options_.link.eval_edges : INT64_MAX);
  out.edges = count;
  if (count == 0) return out;
  // Groups of kCandidateGroupEdges positives share their candidates, whatever the batches: a
  // batch never spans two groups, so a budget that cuts smaller batches ranks against the same
  // candidates. Non-edge j goes with the batch of positive j * count / non_count.
  const int64_t size = std::min(eval_batch_edges_ > 0 ? eval_batch_edges_ : options_.batch_size,
                                kCandidateGroupEdges);
  LinkPassSpec pass = MakePass(/*training=*/false, stream, 0);
  std::vector<EvalEdgeBatch> batches;
  auto non_index = [&](int64_t positive) { return positive * non_count / count; };
  for (int64_t group = 0; group * kCandidateGroupEdges < count; ++group) {
    // With the dataset's candidates, the batches score the positives and non-edges alone.
    const auto drawn =
        DrawCandidates(given ? 0 : options_.link.eval_negatives, data_.graph->num_nodes(),
                       options_.seed, stream, static_cast<uint64_t>(group));
    const int64_t group_end = std::min(count, (group + 1) * kCandidateGroupEdges);
    for (int64_t begin = group * kCandidateGroupEdges; begin < group_end; begin += size) {
      const int64_t end = std::min(group_end, begin + size);
      batches.push_back(
          MakeEvalBatch(pairs, begin, end, non_edges, non_index(begin), non_index(end), drawn));
      pass.seeds.push_back(batches.back().edges.seeds);
    }
  }
  SplitScores scores;
  auto consume = [&](PreparedBatch& next) {
    return ScoreEvalBatch(next, batches[static_cast<size_t>(next.index)], &scores);
  };
  std::string report;
  SKIFF_RETURN_IF_ERROR(RunPass(std::move(pass), consume, &report));
  if (!scores.non_edges.empty()) {
    out.has_non_edges = true;
    out.auc = RocAuc(scores.positives, scores.non_edges);
    out.ap = AveragePrecision(scores.positives, scores.non_edges);
    for (size_t k = 0; k < kSharedHitsAt.size(); ++k) {
      out.shared_hits[k] =
          HitsAgainstNegatives(scores.positives, scores.non_edges, kSharedHitsAt[k]);
    }
  }
  if (given) SKIFF_RETURN_IF_ERROR(RankAmongGiven(pairs, count, candidates, &scores.ranks));
  out.ranking = scores.ranks.Result();
  return out;
}

bool UsesDatasetCandidates(const LinkData& data, const TrainOptions& options) {
  return data.candidates > 0 && options.link.eval_negatives > 0 &&
         options.link.eval_candidates == EvalCandidates::kDataset;
}

bool LinkTrainer::UsesDatasetCandidates() const {
  return train::UsesDatasetCandidates(data_, options_);
}

Status LinkTrainer::AddRank(int64_t s, float positive, std::span<const float> candidates,
                            std::span<const int64_t> candidate_nodes, RankingAccumulator* ranks) {
  if (options_.link.ranking != Ranking::kFiltered) {
    ranks->Add(positive, candidates);
    return Status::Ok();
  }
  std::vector<int64_t> row;
  SKIFF_RETURN_IF_ERROR(data_.graph->Neighbors(s, &row));
  std::vector<float> kept;
  for (size_t j = 0; j < candidates.size(); ++j) {
    if (!KnownEdge(s, candidate_nodes[j], row)) kept.push_back(candidates[j]);
  }
  ranks->Add(positive, kept);
  return Status::Ok();
}

Status LinkTrainer::RankAmongGiven(const std::vector<int64_t>& pairs, int64_t count,
                                   const std::vector<int64_t>& candidates,
                                   RankingAccumulator* ranks) {
  const CandidateRankingInput in{.pairs = pairs,
                                 .count = count,
                                 .candidates = candidates,
                                 .k = data_.candidates,
                                 .num_nodes = data_.graph->num_nodes(),
                                 .batch_nodes = std::max<int64_t>(1, options_.eval_batch_size),
                                 .dim = options_.link.out_dim,
                                 .chunk_bytes = candidate_chunk_bytes_};
  const BatchEncoder encode = [&](std::span<const int64_t> batches, const EmbeddingSink& sink) {
    return EncodeBatches(batches, in.batch_nodes, sink);
  };
  const CrossScorer score = [&](const float* emb, int64_t rows, int32_t s,
                                std::span<const int32_t> cand, std::vector<float>* out) {
    return decoder_->ScoreCandidates(emb, rows, s, cand, out);
  };
  KnownFilter known = nullptr;
  if (options_.link.ranking == Ranking::kFiltered) {
    known = [&](int64_t s, std::span<const int64_t> nodes, std::span<uint8_t> out) -> Status {
      std::vector<int64_t> row;
      SKIFF_RETURN_IF_ERROR(data_.graph->Neighbors(s, &row));
      for (size_t j = 0; j < nodes.size(); ++j) out[j] = KnownEdge(s, nodes[j], row) ? 1 : 0;
      return Status::Ok();
    };
  }
  SKIFF_ASSIGN_OR_RETURN(const std::vector<double> ranked,
                         RankAmongCandidates(in, encode, score, known));
  for (const double rank : ranked) ranks->AddRank(rank);
  return Status::Ok();
}

bool LinkTrainer::RecordBest(int64_t epoch, const LinkEpochMetrics& m) {
  const double key = m.valid.ranking.count > 0 ? m.valid.ranking.mrr : m.valid.auc;
  if (key <= best_key_) return false;
  best_key_ = key;
  best_epoch_ = epoch;
  best_valid_ = m.valid;
  best_test_ = m.test;
  return true;
}

Status LinkTrainer::SaveCheckpoints(int64_t epoch, bool improved) {
  if (options_.checkpoint_path.empty()) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const Checkpoint checkpoint, MakeCheckpoint(epoch));
  return WriteEpochCheckpoints(options_.checkpoint_path, checkpoint, improved);
}

Result<LinkSummary> LinkTrainer::Run() {
  LinkSummary summary;
  MetricsFile metrics;
  // Rank 0 writes the metrics and checkpoints; every rank evaluates (below).
  const bool writes = comm_ == nullptr || comm_->rank() == 0;
  if (writes) SKIFF_RETURN_IF_ERROR(metrics.Open(options_.metrics_path, next_epoch_));
  for (int64_t epoch = next_epoch_; epoch < options_.epochs; ++epoch) {
    SKIFF_ASSIGN_OR_RETURN(LinkEpochMetrics m, TrainEpoch(epoch));
    const auto eval_start = Clock::now();
    SKIFF_ASSIGN_OR_RETURN(m.valid,
                           Evaluate(data_.valid, data_.valid_neg, kValidStream, data_.valid_cand));
    SKIFF_ASSIGN_OR_RETURN(m.test,
                           Evaluate(data_.test, data_.test_neg, kTestStream, data_.test_cand));
    m.eval_seconds = SecondsSince(eval_start);
    const bool improved = RecordBest(epoch, m);
    next_epoch_ = epoch + 1;
    if (writes) {
      SKIFF_RETURN_IF_ERROR(SaveCheckpoints(epoch, improved));
      SKIFF_RETURN_IF_ERROR(metrics.Append(m.ToJson()));
    }
    if (options_.show_progress) LogEpoch(m, improved);
    summary.epochs.push_back(std::move(m));
  }
  summary.best_epoch = best_epoch_;
  summary.best_valid = best_valid_;
  summary.best_test = best_test_;
  return summary;
}

Result<Checkpoint> LinkTrainer::MakeCheckpoint(int64_t epoch) {
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::vector<float>> * state, optimizer_->state());
  Checkpoint c;
  c.config_json = options_.ToJson();
  c.epoch = epoch;
  c.seed = options_.seed;
  c.best_epoch = best_epoch_;
  c.best_valid_acc = best_key_;
  c.best_test_acc = best_test_.ranking.count > 0 ? best_test_.ranking.mrr : best_test_.auc;
  if (best_epoch_ >= 0) c.best_metrics_json = BestMetricsJson(best_valid_, best_test_);
  AppendParameters(model_->Parameters(), &c);
  AppendParameters(decoder_->Parameters(), &c);
  // The decoder steps with the encoder (Step), so one count serves both.
  SKIFF_CHECK(decoder_steps_ == optimizer_->steps());
  c.optimizer_steps = optimizer_->steps();
  c.optimizer_state = *state;
  c.optimizer_state.insert(c.optimizer_state.end(), decoder_state_.begin(), decoder_state_.end());
  return c;
}

Status LinkTrainer::Restore(const Checkpoint& c) {
  const std::vector<model::Parameter> encoder = model_->Parameters();
  const std::vector<model::Parameter> decoder = decoder_->Parameters();
  if (c.parameters.size() != encoder.size() + decoder.size()) {
    return Status::InvalidArgument("checkpoint has " + std::to_string(c.parameters.size()) +
                                   " parameters, the encoder and decoder " +
                                   std::to_string(encoder.size() + decoder.size()));
  }
  const std::span<const CheckpointTensor> saved(c.parameters);
  SKIFF_RETURN_IF_ERROR(MatchParameters(encoder, saved.first(encoder.size())));
  SKIFF_RETURN_IF_ERROR(MatchParameters(decoder, saved.subspan(encoder.size())));
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::vector<float>> * state, optimizer_->state());
  if (c.optimizer_state.size() != state->size() + decoder_state_.size()) {
    return Status::InvalidArgument("checkpoint optimiser state does not match the optimiser");
  }
  const std::span<const std::vector<float>> saved_state(c.optimizer_state);
  SKIFF_RETURN_IF_ERROR(MatchState(*state, saved_state.first(state->size())));
  SKIFF_RETURN_IF_ERROR(MatchState(decoder_state_, saved_state.subspan(state->size())));
  LinkEvaluation valid, test;
  if (c.best_epoch >= 0)
    SKIFF_RETURN_IF_ERROR(ParseBestMetrics(c.best_metrics_json, &valid, &test));
  CopyParameters(saved.first(encoder.size()), encoder);
  CopyParameters(saved.subspan(encoder.size()), decoder);
  const size_t encoder_slots = state->size();
  state->assign(c.optimizer_state.begin(), c.optimizer_state.begin() + encoder_slots);
  decoder_state_.assign(c.optimizer_state.begin() + encoder_slots, c.optimizer_state.end());
  optimizer_->set_steps(c.optimizer_steps);
  decoder_steps_ = c.optimizer_steps;
  next_epoch_ = c.epoch + 1;
  best_epoch_ = c.best_epoch;
  best_key_ = c.best_epoch >= 0 ? c.best_valid_acc : -1;
  best_valid_ = valid;
  best_test_ = test;
  return Status::Ok();
}

Status LinkTrainer::EncodeBatches(std::span<const int64_t> batches, int64_t batch_nodes,
                                  const EmbeddingSink& sink) {
  SKIFF_CHECK(batch_nodes > 0);
  const int64_t n = data_.graph->num_nodes();
  LinkPassSpec pass = MakePass(/*training=*/false, kPredictStream, 0);
  for (const int64_t c : batches) {
    if (c < 0 || c * batch_nodes >= n) {
      return Status::InvalidArgument("batch " + std::to_string(c) + " of " +
                                     std::to_string(batch_nodes) + " nodes is past the graph's " +
                                     std::to_string(n) + " nodes");
    }
    std::vector<int64_t> seeds(
        static_cast<size_t>(std::min(n, (c + 1) * batch_nodes) - c * batch_nodes));
    for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = c * batch_nodes + static_cast<int64_t>(i);
    pass.seeds.push_back(std::move(seeds));
    pass.batch_numbers.push_back(static_cast<uint64_t>(c));
  }
  const auto out_dim = static_cast<size_t>(options_.link.out_dim);
  auto consume = [&](PreparedBatch& next) -> Status {
    SKIFF_RETURN_IF_ERROR(ForwardPrepared(next, /*training=*/false, 0));
    const std::vector<int64_t>& seeds = next.batch.seeds;
    SKIFF_CHECK(step_out_.size() == seeds.size() * out_dim);
    return sink(seeds, step_out_.data());
  };
  std::string report;
  return RunPass(std::move(pass), consume, &report);
}

std::string BestMetricsJson(const LinkEvaluation& valid, const LinkEvaluation& test) {
  return "{" + valid.JsonMembers("valid_") + ", " + test.JsonMembers("test_") + "}";
}

namespace {

// One split's evaluation from the members JsonMembers(prefix) wrote.
Status ParseEvaluation(const nlohmann::json& j, const std::string& prefix, LinkEvaluation* e) {
  auto number = [&](const std::string& key, double* out) -> Status {
    const auto it = j.find(prefix + key);
    if (it == j.end() || !it->is_number()) {
      return Status::Corruption("best metrics: no number \"" + prefix + key + "\"");
    }
    *out = it->get<double>();
    return Status::Ok();
  };
  double edges = 0;
  SKIFF_RETURN_IF_ERROR(number("edges", &edges));
  e->edges = static_cast<int64_t>(edges);
  e->has_non_edges = j.contains(prefix + "auc");
  if (e->has_non_edges) {
    SKIFF_RETURN_IF_ERROR(number("auc", &e->auc));
    SKIFF_RETURN_IF_ERROR(number("ap", &e->ap));
    for (size_t k = 0; k < kSharedHitsAt.size(); ++k) {
      const std::string key = "neg_hits@" + std::to_string(kSharedHitsAt[k]);
      if (j.contains(prefix + key)) SKIFF_RETURN_IF_ERROR(number(key, &e->shared_hits[k]));
    }
  }
  if (!j.contains(prefix + "mrr")) return Status::Ok();
  e->ranking.count = e->edges;
  SKIFF_RETURN_IF_ERROR(number("mrr", &e->ranking.mrr));
  for (size_t k = 0; k < kHitsAt.size(); ++k) {
    SKIFF_RETURN_IF_ERROR(number("hits@" + std::to_string(kHitsAt[k]), &e->ranking.hits[k]));
  }
  return Status::Ok();
}

}  // namespace

Status ParseBestMetrics(const std::string& json, LinkEvaluation* valid, LinkEvaluation* test) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::Corruption("best metrics: not a JSON object");
  SKIFF_RETURN_IF_ERROR(ParseEvaluation(j, "valid_", valid));
  return ParseEvaluation(j, "test_", test);
}

}  // namespace skiff::train
