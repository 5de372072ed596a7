#include "skiff/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "kernels/cpu/cross_entropy.h"
#include "skiff/log.h"
#include "skiff/progress.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/batch_stream.h"
#include "skiff/train/gather_rows.h"
#include "skiff/train/metrics_file.h"
#include "skiff/train/owned_pass.h"
#include "skiff/units.h"

namespace skiff::train {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Hands every batch of `stream` to `consume` in order, each with its number in the pass
// (numbers[i] for the stream's batch i).
Status DrainStream(BatchStream& stream, const std::vector<uint64_t>& numbers,
                   const std::function<Status(PreparedBatch&)>& consume) {
  while (true) {
    SKIFF_ASSIGN_OR_RETURN(auto next, stream.Next());
    if (!next.has_value()) return Status::Ok();
    next->index = static_cast<int64_t>(numbers[static_cast<size_t>(next->index)]);
    SKIFF_RETURN_IF_ERROR(consume(*next));
    stream.Recycle(std::move(*next));
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Result<std::unique_ptr<InMemoryData>> LoadInMemory(const format::Dataset& dataset) {
  auto out = std::make_unique<InMemoryData>();
  SKIFF_ASSIGN_OR_RETURN(out->graph, sampler::InMemoryGraph::Load(dataset));
  SKIFF_ASSIGN_OR_RETURN(out->features, sampler::InMemoryFeatures::Load(dataset));
  TrainData& d = out->data;
  d.graph = out->graph.get();
  d.features = out->features.get();
  d.csr = out->graph.get();
  SKIFF_ASSIGN_OR_RETURN(d.labels, dataset.LoadLabels());
  d.num_classes = dataset.manifest().num_classes;
  SKIFF_ASSIGN_OR_RETURN(format::Dataset::NodeSplits splits, dataset.LoadSplits());
  d.train = std::move(splits.train);
  d.valid = std::move(splits.valid);
  d.test = std::move(splits.test);
  return out;
}

std::string EpochMetrics::ToJson() const {
  json j;
  j["epoch"] = epoch;
  j["loss"] = loss;
  j["train_acc"] = train_acc;
  j["valid_acc"] = valid_acc;
  j["valid_loss"] = valid_loss;
  j["test_acc"] = test_acc;
  j["epoch_seconds"] = epoch_seconds;
  j["samples_per_second"] = samples_per_second;
  j["sample_busy_seconds"] = sample_seconds;
  j["gather_busy_seconds"] = gather_seconds;
  j["compute_busy_seconds"] = compute_seconds;
  j["compute_wait_seconds"] = compute_wait_seconds;
  j["eval_seconds"] = eval_seconds;
  if (!pipeline_json.empty()) j["pipeline"] = json::parse(pipeline_json);
  return j.dump();
}

Result<std::unique_ptr<Trainer>> Trainer::Create(const TrainData& data, TrainOptions options,
                                                 ModelFactory factory) {
  if (data.graph == nullptr || data.features == nullptr) {
    return Status::InvalidArgument("training needs a graph and a feature source");
  }
  if (data.train.empty()) return Status::InvalidArgument("the dataset has no training nodes");
  if (data.num_classes <= 0) return Status::InvalidArgument("the dataset has no classes");
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
  if (options.batch_size <= 0 || options.eval_batch_size <= 0 || options.epochs < 0) {
    return Status::InvalidArgument("batch sizes must be positive and epochs non-negative");
  }
  SKIFF_RETURN_IF_ERROR(model::Optimizer::ValidateConfig(options.optimizer));
  options.model.in_dim = data.features->dim();
  options.model.num_classes = data.num_classes;
  options.model.seed = options.seed;
  std::unique_ptr<Trainer> t(new Trainer(data, std::move(options)));
  if (!factory) factory = model::Model::CreateCpu;
  SKIFF_ASSIGN_OR_RETURN(t->model_, factory(t->options_.model));
  t->optimizer_ = std::make_unique<model::Optimizer>(*t->model_, t->options_.optimizer);
  if (t->options_.accumulate < 1) return Status::InvalidArgument("--accumulate must be >= 1");
  t->micro_batches_ = std::max(1, t->options_.micro_batches);
  const bool degrees = model::NeedsNodeDegrees(t->options_.model.kind);
  t->train_sampler_ =
      std::make_unique<sampler::NeighborSampler>(*data.graph, t->options_.fanouts, degrees);
  t->eval_sampler_ =
      std::make_unique<sampler::NeighborSampler>(*data.graph, t->options_.eval_fanouts, degrees);
  return t;
}

Result<Checkpoint> Trainer::MakeCheckpoint(int64_t epoch) {
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::vector<float>> * state, optimizer_->state());
  Checkpoint c;
  c.config_json = options_.ToJson();
  c.epoch = epoch;
  c.seed = options_.seed;
  c.best_epoch = best_epoch_;
  c.best_valid_acc = best_valid_acc_;
  c.best_valid_loss = best_valid_loss_;
  c.best_test_acc = best_test_acc_;
  AppendParameters(model_->Parameters(), &c);
  c.optimizer_steps = optimizer_->steps();
  c.optimizer_state = *state;
  return c;
}

Status Trainer::Restore(const Checkpoint& c) {
  const std::vector<model::Parameter> params = model_->Parameters();
  SKIFF_RETURN_IF_ERROR(MatchParameters(params, c.parameters));
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::vector<float>> * state, optimizer_->state());
  SKIFF_RETURN_IF_ERROR(MatchState(*state, c.optimizer_state));
  CopyParameters(c.parameters, params);
  *state = c.optimizer_state;
  optimizer_->set_steps(c.optimizer_steps);
  next_epoch_ = c.epoch + 1;
  best_epoch_ = c.best_epoch;
  best_valid_acc_ = c.best_valid_acc;
  best_valid_loss_ = c.best_valid_loss;
  best_test_acc_ = c.best_test_acc;
  return Status::Ok();
}

PassSpec Trainer::MakePassSpec(const std::vector<int64_t>* nodes, bool training, uint64_t stream,
                               int64_t epoch, int64_t batch_size) const {
  PassSpec pass;
  pass.nodes = nodes;
  pass.training = training;
  pass.stream = stream;
  pass.epoch = epoch;
  pass.batch_size = batch_size;
  pass.gather_features = !model_->holds_features();
  if (model_->accepts_aggregated_input()) {
    pass.aggregation = model::InputAggregationOf(model_->config());
    pass.input_dropout = model::FirstLayerDropout(model_->config());
  }
  return pass;
}

model::BatchInput Trainer::InputOf(const PreparedBatch& next, const std::vector<int>& fanouts) {
  model::BatchInput input{.batch = &next.batch};
  if (next.unsampled) {
    device_sampling_ = {.fanouts = &fanouts, .seed = next.sample_seed};
    input.sample = &device_sampling_;
    return input;
  }
  if (next.features.empty() && model_->holds_features()) return input;
  input.x = next.features.data();
  if (next.aggregated) {
    SKIFF_CHECK(!next.batch.blocks.empty());
    const auto rows = static_cast<size_t>(next.batch.blocks[0].num_dst * model_->config().in_dim);
    SKIFF_CHECK(next.features.size() == 2 * rows);
    input.aggregated = next.features.data() + rows;
  }
  return input;
}

Result<bool> Trainer::OfferFeatures() {
  if (features_offered_) return model_->holds_features();
  features_offered_ = true;
  SKIFF_ASSIGN_OR_RETURN(const bool held,
                         model_->HoldFeatures(*data_.features, options_.device_memory_bytes));
  if (held) LogInfo("features held in device memory: batches carry node IDs only");
  SKIFF_RETURN_IF_ERROR(OfferGraph(held));
  return held;
}

Status Trainer::OfferGraph(bool features_held) {
  if (options_.sampler == SamplerPlace::kHost) return Status::Ok();
  const bool required = options_.sampler == SamplerPlace::kDevice;
  bool held = false;
  if (features_held && data_.csr != nullptr) {
    SKIFF_ASSIGN_OR_RETURN(held, model_->HoldGraph(*data_.csr, options_.device_memory_bytes,
                                                   options_.LargestFanout()));
  }
  if (held) {
    LogInfo("graph held in device memory: batches are sampled on the device");
    return Status::Ok();
  }
  if (!required) return Status::Ok();
  if (!features_held) {
    return Status::InvalidArgument(
        "--sampler device needs a model that holds the features on its device (--device cuda, "
        "with the features fitting in --device-memory)");
  }
  if (data_.csr == nullptr) {
    return Status::InvalidArgument("--sampler device: this run has no graph to put on the device");
  }
  return Status::ResourceExhausted(
      "--sampler device: the model could not take the graph (the reason is logged above: raise "
      "--device-memory or lower the fanouts, or use --sampler host or auto)");
}

Status Trainer::RunTrainingPass(int64_t epoch, const std::function<Status(PreparedBatch&)>& consume,
                                const std::function<uint64_t(int64_t)>& dropout_seed,
                                EpochMetrics* m) {
  if (Owned()) return RunOwnedTrainingPass(epoch, consume, m);
  if (RunsPasses()) {
    PassSpec pass = MakePassSpec(&TrainNodes(), true, kTrainStream, epoch, options_.batch_size);
    pass.dropout_seed = dropout_seed;
    if (Distributed()) {
      std::vector<uint64_t> numbers;
      std::vector<std::vector<int64_t>> batches = OwnBatches(
          TrainNodes(), options_.batch_size, true, static_cast<uint64_t>(epoch), &numbers);
      return RunShare(std::move(pass), std::move(batches), numbers, consume, &m->pipeline_json);
    }
    if (EvaluatesSplitsTogether()) {
      // The evaluation EvaluateSplits runs next: the runner may start on it as this pass ends.
      pass.then = std::make_shared<const PassSpec>(EvaluateBothPass(
          data_.valid, kValidStream, data_.test, kTestStream, epoch + 1 < options_.epochs));
    }
    return pass_runner_(pass, consume, &m->pipeline_json);
  }
  BatchStreamOptions so;
  so.threads = options_.sampler_threads;
  so.capacity = options_.prefetch_batches;
  so.seed = options_.seed;
  so.stream = kTrainStream;
  so.epoch = static_cast<uint64_t>(epoch);
  so.gather_features = !model_->holds_features();
  so.sample = !model_->samples_on_device();
  std::vector<uint64_t> numbers;
  std::vector<std::vector<int64_t>> batches =
      OwnBatches(TrainNodes(), options_.batch_size, true, static_cast<uint64_t>(epoch), &numbers);
  so.batch_numbers = numbers;
  BatchStream stream(*train_sampler_, *data_.features, &data_.labels, std::move(batches), so);
  SKIFF_RETURN_IF_ERROR(DrainStream(stream, numbers, consume));
  m->sample_seconds = stream.sample_busy_seconds();
  m->gather_seconds = stream.gather_busy_seconds();
  m->compute_wait_seconds = stream.consumer_wait_seconds();
  return Status::Ok();
}

Status Trainer::RunShare(PassSpec pass, std::vector<std::vector<int64_t>> batches,
                         const std::vector<uint64_t>& numbers,
                         const std::function<Status(PreparedBatch&)>& consume,
                         std::string* report_json) {
  if (batches.empty()) return Status::Ok();  // a rank without a batch in this pass
  std::vector<int64_t> nodes;
  for (std::vector<int64_t>& batch : batches) {
    nodes.insert(nodes.end(), batch.begin(), batch.end());
    batch = {};
  }
  pass.nodes = &nodes;
  pass.batch_numbers = &numbers;
  if (pass.dropout_seed) {
    pass.dropout_seed = [seed = pass.dropout_seed, &numbers](int64_t i) {
      return seed(static_cast<int64_t>(numbers[static_cast<size_t>(i)]));
    };
  }
  return pass_runner_(
      pass,
      [&](PreparedBatch& next) {
        next.index = static_cast<int64_t>(numbers[static_cast<size_t>(next.index)]);
        return consume(next);
      },
      report_json);
}

Status Trainer::RunOwnedTrainingPass(int64_t epoch,
                                     const std::function<Status(PreparedBatch&)>& consume,
                                     EpochMetrics* m) {
  const OwnedPassSpec spec{.plan = PlanBatches(TrainNodes(), options_.batch_size, true,
                                               options_.seed, static_cast<uint64_t>(epoch)),
                           .seed = options_.seed,
                           .stream = kTrainStream,
                           .epoch = static_cast<uint64_t>(epoch),
                           .labels = &data_.labels,
                           .gather_features = true};
  const ExchangeTraffic graph_before = graph_traffic_ ? *graph_traffic_ : ExchangeTraffic{};
  const ExchangeTraffic features_before = feature_traffic_ ? *feature_traffic_ : ExchangeTraffic{};
  const auto start = Clock::now();
  double consume_seconds = 0;
  SKIFF_RETURN_IF_ERROR(RunOwnedPass(*train_sampler_, *data_.features, *ranges_, comm_->rank(),
                                     spec, [&](PreparedBatch& next) -> Status {
                                       if (digest_) {
                                         SKIFF_RETURN_IF_ERROR(digest_(BatchDigestLine(
                                             static_cast<uint64_t>(epoch), kTrainStream, next.index,
                                             comm_->rank(), next.batch, next.features)));
                                       }
                                       const auto c0 = Clock::now();
                                       Status consumed = consume(next);
                                       consume_seconds += Seconds(c0, Clock::now());
                                       return consumed;
                                     }));
  // Sampling and gathering, with their exchanges, ran on this thread between the steps.
  m->sample_seconds = Seconds(start, Clock::now()) - consume_seconds;
  if (graph_traffic_ == nullptr || feature_traffic_ == nullptr) return Status::Ok();
  // What the pass fetched, summed over the ranks (a collective: every rank reports).
  int64_t fetched[4] = {
      graph_traffic_->rows_fetched - graph_before.rows_fetched,
      static_cast<int64_t>(graph_traffic_->bytes_received - graph_before.bytes_received),
      feature_traffic_->rows_fetched - features_before.rows_fetched,
      static_cast<int64_t>(feature_traffic_->bytes_received - features_before.bytes_received)};
  SKIFF_RETURN_IF_ERROR(comm_->AllReduceSum(std::span<int64_t>(fetched, 4), "pass exchanges"));
  json j;
  j["exchange"] = {{"remote_nodes", fetched[0]},
                   {"adjacency_bytes", fetched[1]},
                   {"feature_rows", fetched[2]},
                   {"feature_bytes", fetched[3]}};
  m->pipeline_json = j.dump();
  if (options_.show_progress) {
    LogInfo("training pass: the ranks fetched the picks of " + std::to_string(fetched[0]) +
            " remote nodes (" + FormatBytes(static_cast<uint64_t>(fetched[1])) + ") and " +
            std::to_string(fetched[2]) + " feature rows (" +
            FormatBytes(static_cast<uint64_t>(fetched[3])) + ") from each other");
  }
  return Status::Ok();
}

Status Trainer::EvaluateSplits(EpochMetrics* m) {
  const bool repeats = m->epoch + 1 < options_.epochs;  // evaluated again after the next epoch
  // Evaluation can take longer than the training pass (evaluation fanouts): its own line.
  std::optional<Progress> progress;
  if (options_.show_progress) {
    progress.emplace("evaluate", OwnEvalNodes(data_.valid) + OwnEvalNodes(data_.test), "nodes");
  }
  Progress* const shown = progress ? &*progress : nullptr;
  if (EvaluatesSplitsTogether()) {
    // One pass over both (a runner shares the reads of the two).
    SKIFF_ASSIGN_OR_RETURN(const auto both, EvaluateBoth(data_.valid, kValidStream, data_.test,
                                                         kTestStream, repeats, shown));
    m->valid_acc = both[0].accuracy;
    m->valid_loss = both[0].loss;
    m->test_acc = both[1].accuracy;
    return Status::Ok();
  }
  if (!data_.valid.empty()) {
    SKIFF_ASSIGN_OR_RETURN(const Evaluation valid,
                           Evaluate(data_.valid, kValidStream, repeats, shown));
    m->valid_acc = valid.accuracy;
    m->valid_loss = valid.loss;
  }
  if (!data_.test.empty()) {
    SKIFF_ASSIGN_OR_RETURN(const Evaluation test,
                           Evaluate(data_.test, kTestStream, repeats, shown));
    m->test_acc = test.accuracy;
  }
  return Status::Ok();
}

std::string StreamPassReport(const EpochMetrics& m, double pass_seconds, int threads,
                             bool sampled_on_device) {
  // The compute step waits for the stream only when the stream is slower than it.
  const bool stream_bound = m.compute_wait_seconds > 0.1 * pass_seconds;
  const char* stream =
      sampled_on_device ? "batch stream (seeds and labels)" : "sampling + gathering";
  const char* compute = sampled_on_device
                            ? "compute (the model's thread: staging, and sampling and computing on "
                              "the device)"
                            : "compute";
  char line[320];
  std::snprintf(line, sizeof(line),
                "training pass %.2fs: %s %.2fs busy (%d threads), compute %.2fs busy, waited "
                "%.2fs for batches: bound by %s",
                pass_seconds, stream, m.sample_seconds + m.gather_seconds, threads,
                m.compute_seconds, m.compute_wait_seconds, stream_bound ? stream : compute);
  return line;
}

Result<EpochMetrics> Trainer::TrainEpoch(int64_t epoch) {
  SKIFF_RETURN_IF_ERROR(OfferFeatures().status());  // once per run, before the first epoch's clock
  if (options_.epoch_fraction < 1) {
    epoch_train_ = EpochSubset(data_.train, options_.epoch_fraction, options_.seed,
                               static_cast<uint64_t>(epoch));
  }
  EpochMetrics m;
  m.epoch = epoch;
  const auto start = Clock::now();
  std::optional<Progress> progress;
  if (options_.show_progress) {
    // Counted in seeds, whose total is known however a pass runner cuts the batches (the
    // out-of-core plan never spans buffer states), so the line always has an ETA.
    progress.emplace("epoch " + std::to_string(epoch), OwnSeeds(), "nodes");
  }
  double compute_seconds = 0;
  // The dropout seed of batch `index`: the compute step's, and the one a runner that gathers
  // aggregated input masks the first layer's input with.
  const std::function<uint64_t(int64_t)> dropout_seed = [this, epoch](int64_t index) {
    return sampler::BatchSeed(options_.seed, kDropoutStream, epoch, static_cast<uint64_t>(index));
  };
  // Steps over several batches (and every owned-partition step): each batch's gradients into
  // the step's sum, one update per step (step_accumulator.h).
  const int64_t step_batches = StepBatches();
  StepAccumulator* steps = Steps();
  if (steps != nullptr) {
    // A data-parallel pass's batches (every rank's) are the in-memory plan's; an owned pass's
    // are the plan batches; one process counts its batches as they come.
    const int64_t planned = CeilDiv(static_cast<int64_t>(TrainNodes().size()), options_.batch_size);
    steps->BeginPass(Distributed() || Owned() ? planned : -1);
  }
  auto consume = [&](PreparedBatch& next) -> Status {
    const auto c0 = Clock::now();
    const model::BatchInput input = InputOf(next, options_.fanouts);
    if (Owned()) {
      // Every rank consumes every plan batch (its part may be empty): the steps line up.
      SKIFF_RETURN_IF_ERROR(AddOwnedPart(next, dropout_seed(next.index)));
    } else if (step_batches == 1 && micro_batches_ <= 1) {
      SKIFF_RETURN_IF_ERROR(model_->TrainStep(input, dropout_seed(next.index), *optimizer_));
    } else {
      SKIFF_RETURN_IF_ERROR(
          model_->ComputeGradientsInParts(input, micro_batches_, dropout_seed(next.index)));
      SKIFF_RETURN_IF_ERROR(step_batches == 1 ? optimizer_->Step() : steps->Add(next.index));
    }
    compute_seconds += Seconds(c0, Clock::now());
    if (progress) progress->Add(next.batch.seeds.size());
    return Status::Ok();
  };
  SKIFF_RETURN_IF_ERROR(RunTrainingPass(epoch, consume, dropout_seed, &m));
  if (steps != nullptr) SKIFF_RETURN_IF_ERROR(steps->EndPass());
  SKIFF_RETURN_IF_ERROR(model_->EndTrainingPass(*optimizer_));
  // A device model may still be computing: its totals wait for the last step.
  const auto f0 = Clock::now();
  SKIFF_ASSIGN_OR_RETURN(model::LossTotals totals, model_->TakeLossTotals());
  SKIFF_RETURN_IF_ERROR(ReduceTotals(&totals));
  compute_seconds += Seconds(f0, Clock::now());
  if (progress) progress->Finish();
  m.loss = totals.mean_loss();
  m.train_acc = totals.accuracy();
  m.compute_seconds = compute_seconds;
  const double train_seconds = Seconds(start, Clock::now());
  m.samples_per_second = train_seconds > 0 ? TrainNodes().size() / train_seconds : 0;
  // A pass runner prints its own stage report; the batch stream's is this line.
  if (options_.show_progress && !RunsPasses()) {
    LogInfo(
        StreamPassReport(m, train_seconds, options_.sampler_threads, model_->samples_on_device()));
  }
  const auto e0 = Clock::now();
  SKIFF_RETURN_IF_ERROR(EvaluateSplits(&m));
  m.eval_seconds = Seconds(e0, Clock::now());
  m.epoch_seconds = Seconds(start, Clock::now());
  return m;
}

OwnedPassSpec Trainer::OwnedEvalPass(const std::vector<int64_t>& nodes, uint64_t stream_id,
                                     const std::vector<int32_t>* labels) const {
  return OwnedPassSpec{.plan = PlanBatches(nodes, EvalBatchSize(), false, 0, 0),
                       .seed = options_.seed,
                       .stream = stream_id,
                       .epoch = 0,
                       .labels = labels,
                       .gather_features = true};
}

Status Trainer::RunEvalBatches(const std::vector<int64_t>& nodes, uint64_t stream_id, bool repeats,
                               bool shard, const std::vector<int32_t>* labels,
                               const std::function<Status(PreparedBatch&)>& consume) {
  if (Owned()) {
    SKIFF_CHECK(shard);  // prediction takes its own way (PredictOwned)
    return RunOwnedPass(*eval_sampler_, *data_.features, *ranges_, comm_->rank(),
                        OwnedEvalPass(nodes, stream_id, labels),
                        [&](PreparedBatch& next) -> Status {
                          // A rank without seeds in the batch took part in its exchanges.
                          return next.batch.seeds.empty() ? Status::Ok() : consume(next);
                        });
  }
  if (RunsPasses()) {
    // Epoch 0 for every evaluation, as the BatchStream below: evaluation draws the same
    // neighbours every epoch.
    PassSpec pass = MakePassSpec(&nodes, false, stream_id, 0, EvalBatchSize());
    pass.repeats = repeats;
    if (shard && Distributed()) {
      std::vector<uint64_t> numbers;
      std::vector<std::vector<int64_t>> batches =
          OwnBatches(nodes, EvalBatchSize(), false, 0, &numbers);
      return RunShare(std::move(pass), std::move(batches), numbers, consume, nullptr);
    }
    return pass_runner_(pass, consume, nullptr);
  }
  BatchStreamOptions so;
  so.threads = options_.sampler_threads;
  so.capacity = options_.prefetch_batches;
  so.seed = options_.seed;
  so.stream = stream_id;
  so.gather_features = !model_->holds_features();
  so.sample = !model_->samples_on_device();
  std::vector<uint64_t> numbers;
  std::vector<std::vector<int64_t>> batches;
  if (shard) {
    batches = OwnBatches(nodes, EvalBatchSize(), false, 0, &numbers);
  } else {
    batches = PlanBatches(nodes, EvalBatchSize(), false, 0, 0);
    for (size_t b = 0; b < batches.size(); ++b) numbers.push_back(b);
  }
  so.batch_numbers = numbers;
  BatchStream stream(*eval_sampler_, *data_.features, labels, std::move(batches), so);
  return DrainStream(stream, numbers, consume);
}

Result<Trainer::Evaluation> Trainer::Evaluate(const std::vector<int64_t>& nodes, uint64_t stream_id,
                                              bool repeats, Progress* progress) {
  SKIFF_RETURN_IF_ERROR(OfferFeatures().status());
  // Totals of earlier steps were taken by their pass; these are this evaluation's alone.
  auto consume = [&](PreparedBatch& next) -> Status {
    if (progress != nullptr) progress->Add(next.batch.seeds.size());
    return model_->EvalStepInParts(InputOf(next, options_.eval_fanouts),
                                   EvalParts(next.batch.seeds.size()));
  };
  SKIFF_RETURN_IF_ERROR(
      RunEvalBatches(nodes, stream_id, repeats, /*shard=*/true, &data_.labels, consume));
  SKIFF_ASSIGN_OR_RETURN(model::LossTotals totals, model_->TakeLossTotals());
  SKIFF_RETURN_IF_ERROR(ReduceTotals(&totals));
  return Evaluation{.accuracy = totals.accuracy(), .loss = totals.mean_loss()};
}

PassSpec Trainer::EvaluateBothPass(const std::vector<int64_t>& first, uint64_t first_stream,
                                   const std::vector<int64_t>& second, uint64_t second_stream,
                                   bool repeats) const {
  PassSpec pass = MakePassSpec(&first, false, first_stream, 0, EvalBatchSize());
  pass.repeats = repeats;
  pass.more = {{&second, second_stream}};
  return pass;
}

bool Trainer::RunsPasses() const {
  // A model that samples on its device holds the graph and the features there: its batches are
  // seeds and labels, which the BatchStream hands over without the runner's reads or plan.
  // A data-parallel rank gives the runner its share of each pass (RunShare).
  return pass_runner_ && !model_->samples_on_device();
}

uint64_t Trainer::OwnSeeds() const {
  const auto n = static_cast<int64_t>(TrainNodes().size());
  if (Owned()) {
    return OwnedPart(TrainNodes(), *ranges_, comm_->rank()).size();
  }
  if (!Distributed()) return static_cast<uint64_t>(n);
  uint64_t seeds = 0;
  for (int64_t b = comm_->rank(); b * options_.batch_size < n; b += comm_->size()) {
    seeds += static_cast<uint64_t>(std::min(options_.batch_size, n - b * options_.batch_size));
  }
  return seeds;
}

uint64_t Trainer::OwnEvalNodes(const std::vector<int64_t>& nodes) const {
  if (Owned()) return OwnedPart(nodes, *ranges_, comm_->rank()).size();
  if (!Distributed()) return nodes.size();
  std::vector<uint64_t> numbers;
  uint64_t count = 0;
  for (const auto& batch : OwnBatches(nodes, EvalBatchSize(), false, 0, &numbers)) {
    count += batch.size();
  }
  return count;
}

int64_t Trainer::StepBatches() const {
  if (model_->accumulates_steps()) return 1;  // a replica group: TrainStep takes every batch
  if (Owned()) return options_.accumulate;    // plan batches, each split among the ranks
  return Distributed() ? comm_->size() * options_.accumulate : options_.accumulate;
}

Status Trainer::SetOwnership(const NodeRanges* ranges, const ExchangeTraffic* graph_traffic,
                             const ExchangeTraffic* feature_traffic) {
  SKIFF_CHECK(ranges != nullptr && comm_ != nullptr && ranges->size() == comm_->size());
  if (model_->samples_on_device() || model_->holds_features()) {
    return Status::InvalidArgument(
        "--ownership partitions computes on the host: each rank's batches come from its exchanges");
  }
  ranges_ = ranges;
  graph_traffic_ = graph_traffic;
  feature_traffic_ = feature_traffic;
  return Status::Ok();
}

Status Trainer::AddOwnedPart(const PreparedBatch& next, uint64_t dropout_seed) {
  int64_t mine = 0;
  for (int32_t label : next.batch.labels) mine += label >= 0 ? 1 : 0;
  if (mine > 0) {
    // The part's mean-loss gradient, weighted to its share of the batch's mean. Each rank masks
    // its part's dropout from its own stream.
    const uint64_t part_seed =
        sampler::BatchSeed(dropout_seed, kDropoutStream, static_cast<uint64_t>(comm_->rank()), 0);
    SKIFF_RETURN_IF_ERROR(model_->ComputeGradientsInParts(InputOf(next, options_.fanouts),
                                                          micro_batches_, part_seed));
  }
  const float weight =
      mine > 0 ? static_cast<float>(mine) / static_cast<float>(next.whole_labelled) : 0.0f;
  return Steps()->AddWeighted(mine > 0, weight);
}

Status Trainer::SetCommunicator(dist::Communicator* comm) {
  SKIFF_RETURN_IF_ERROR(CheckWorldSize(options_.world_size, comm));
  comm_ = comm;
  return Status::Ok();
}

std::vector<std::vector<int64_t>> Trainer::OwnBatches(const std::vector<int64_t>& nodes,
                                                      int64_t batch_size, bool shuffle,
                                                      uint64_t epoch,
                                                      std::vector<uint64_t>* numbers) const {
  std::vector<std::vector<int64_t>> all =
      PlanBatches(nodes, batch_size, shuffle, shuffle ? options_.seed : 0, epoch);
  const int rank = comm_ == nullptr ? 0 : comm_->rank();
  return ShardBatches(std::move(all), rank, comm_ == nullptr ? 1 : comm_->size(), numbers);
}

StepAccumulator* Trainer::Steps() {
  if (StepBatches() == 1 && !Owned()) return nullptr;
  if (steps_ == nullptr) {
    const StepAccumulator::Kind kind = Owned()         ? StepAccumulator::Kind::kOwned
                                       : Distributed() ? StepAccumulator::Kind::kReplicated
                                                       : StepAccumulator::Kind::kOneProcess;
    steps_ = std::make_unique<StepAccumulator>(
        kind, model_->NumParameters(), options_.accumulate, comm_,
        StepAccumulator::Hooks{.params = [this] { return model_->Parameters(); },
                               .update = [this] { return optimizer_->Step(); }});
  }
  return steps_.get();
}

Status Trainer::ReduceTotals(model::LossTotals* totals) {
  if (!Distributed()) return Status::Ok();
  double loss = totals->loss_sum;
  int64_t counts[2] = {totals->labelled, totals->correct};
  SKIFF_RETURN_IF_ERROR(comm_->AllReduceSum(std::span<double>(&loss, 1), "loss totals"));
  SKIFF_RETURN_IF_ERROR(comm_->AllReduceSum(std::span<int64_t>(counts, 2), "label counts"));
  *totals = {.loss_sum = loss, .labelled = counts[0], .correct = counts[1]};
  return Status::Ok();
}

bool Trainer::EvaluatesSplitsTogether() const {
  // A data-parallel rank's shares of the two sets run as two passes (PassSpec::batch_numbers).
  return RunsPasses() && !Distributed() && !data_.valid.empty() && !data_.test.empty();
}

Result<std::array<Trainer::Evaluation, 2>> Trainer::EvaluateBoth(const std::vector<int64_t>& first,
                                                                 uint64_t first_stream,
                                                                 const std::vector<int64_t>& second,
                                                                 uint64_t second_stream,
                                                                 bool repeats, Progress* progress) {
  SKIFF_CHECK(RunsPasses());
  SKIFF_RETURN_IF_ERROR(OfferFeatures().status());
  std::array<Evaluation, 2> out;
  int part = 0;  // the set whose totals the model is accumulating
  auto take = [&]() -> Status {
    SKIFF_ASSIGN_OR_RETURN(const model::LossTotals totals, model_->TakeLossTotals());
    out[static_cast<size_t>(part++)] = {.accuracy = totals.accuracy(), .loss = totals.mean_loss()};
    return Status::Ok();
  };
  auto consume = [&](PreparedBatch& next) -> Status {
    while (part < next.part) SKIFF_RETURN_IF_ERROR(take());
    if (progress != nullptr) progress->Add(next.batch.seeds.size());
    return model_->EvalStepInParts(InputOf(next, options_.eval_fanouts),
                                   EvalParts(next.batch.seeds.size()));
  };
  SKIFF_RETURN_IF_ERROR(pass_runner_(
      EvaluateBothPass(first, first_stream, second, second_stream, repeats), consume, nullptr));
  while (part < 2) SKIFF_RETURN_IF_ERROR(take());
  return out;
}

namespace {

// Where each of `nodes` goes in the output: position[node] = its index (-1: not asked for), over
// the `num_nodes` nodes of the dataset.
Result<std::vector<int64_t>> PositionsOf(const std::vector<int64_t>& nodes, size_t num_nodes) {
  std::vector<int64_t> position(num_nodes, -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= static_cast<int64_t>(num_nodes)) {
      return Status::InvalidArgument("predict: node " + std::to_string(nodes[i]) +
                                     " is not in the dataset");
    }
    position[nodes[i]] = static_cast<int64_t>(i);
  }
  return position;
}

// The class with the highest of `c` logits (the first of equal ones).
int32_t ArgMax(const float* logits, int64_t c) {
  int32_t best = 0;
  for (int64_t k = 1; k < c; ++k) {
    if (logits[k] > logits[best]) best = static_cast<int32_t>(k);
  }
  return best;
}

}  // namespace

Status Trainer::Predict(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                        std::vector<float>* embeddings) {
  if (Owned()) return PredictOwned(nodes, classes, embeddings);
  if (Distributed()) return PredictShared(nodes, classes, embeddings);
  SKIFF_RETURN_IF_ERROR(OfferFeatures().status());
  const int64_t c = data_.num_classes;
  const int64_t h = model_->EmbeddingDim();
  classes->assign(nodes.size(), -1);
  embeddings->assign(nodes.size() * static_cast<size_t>(h), 0.0f);
  // A pass runner may hand batches over in another order than `nodes` (out of core, grouped by
  // buffer state): results go to each seed's position.
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> position,
                         PositionsOf(nodes, data_.labels.size()));
  // In nodes: a pass runner may cut batches differently (smaller, within its budget).
  Progress progress("predict", nodes.size(), "nodes");
  std::vector<float> logits, emb;
  auto consume = [&](PreparedBatch& next) -> Status {
    const sampler::MiniBatch& b = next.batch;
    SKIFF_RETURN_IF_ERROR(model_->ForwardInParts(InputOf(next, options_.eval_fanouts),
                                                 EvalParts(b.seeds.size()), &logits, &emb));
    const int64_t rows = static_cast<int64_t>(b.seeds.size());
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t row = position[b.seeds[i]];
      (*classes)[row] = ArgMax(logits.data() + i * c, c);
      std::copy(emb.begin() + i * h, emb.begin() + (i + 1) * h, embeddings->begin() + row * h);
    }
    progress.Add(static_cast<uint64_t>(rows));
    return Status::Ok();
  };
  SKIFF_RETURN_IF_ERROR(
      RunEvalBatches(nodes, kPredictStream, /*repeats=*/false, /*shard=*/false, nullptr, consume));
  progress.Finish();
  return Status::Ok();
}

Status Trainer::AddPredictedRows(PreparedBatch& next, const std::vector<int64_t>& position,
                                 RowsToLead* rows, std::vector<float>* logits,
                                 std::vector<float>* emb) {
  const sampler::MiniBatch& b = next.batch;
  if (b.seeds.empty()) return Status::Ok();
  const int64_t c = data_.num_classes;
  const auto h = static_cast<size_t>(model_->EmbeddingDim());
  SKIFF_RETURN_IF_ERROR(model_->ForwardInParts(InputOf(next, options_.eval_fanouts),
                                               EvalParts(b.seeds.size()), logits, emb));
  for (size_t i = 0; i < b.seeds.size(); ++i) {
    SKIFF_RETURN_IF_ERROR(rows->Add(position[b.seeds[i]], ArgMax(logits->data() + i * c, c),
                                    std::span<const float>(*emb).subspan(i * h, h)));
  }
  return Status::Ok();
}

Status Trainer::PredictShared(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                              std::vector<float>* embeddings) {
  SKIFF_RETURN_IF_ERROR(OfferFeatures().status());
  const int64_t h = model_->EmbeddingDim();
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> position,
                         PositionsOf(nodes, data_.labels.size()));
  std::vector<uint64_t> numbers;
  uint64_t share = 0;
  for (const std::vector<int64_t>& b : OwnBatches(nodes, EvalBatchSize(), false, 0, &numbers)) {
    share += b.size();
  }
  OptionalProgress progress(options_.show_progress, "predict (rank 0's share)", share, "nodes");
  RowsToLead rows(*comm_, static_cast<int64_t>(nodes.size()), h, classes, embeddings);
  std::vector<float> logits, emb;
  auto consume = [&](PreparedBatch& next) -> Status {
    SKIFF_RETURN_IF_ERROR(AddPredictedRows(next, position, &rows, &logits, &emb));
    progress.Add(next.batch.seeds.size());
    return Status::Ok();
  };
  // The ranks run their shares apart (as evaluation): the rows go to rank 0 at the end.
  SKIFF_RETURN_IF_ERROR(
      RunEvalBatches(nodes, kPredictStream, /*repeats=*/false, /*shard=*/true, nullptr, consume));
  progress.Finish();
  SKIFF_RETURN_IF_ERROR(rows.SendAll());
  return rows.Finish();
}

Status Trainer::PredictOwned(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                             std::vector<float>* embeddings) {
  const int64_t h = model_->EmbeddingDim();
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> position,
                         PositionsOf(nodes, data_.labels.size()));
  OptionalProgress progress(options_.show_progress, "predict (rank 0's nodes)",
                            OwnedPart(nodes, *ranges_, comm_->rank()).size(), "nodes");
  RowsToLead rows(*comm_, static_cast<int64_t>(nodes.size()), h, classes, embeddings);
  std::vector<float> logits, emb;
  // Every rank takes every plan batch (also one it has no seeds of): after each, the ranks'
  // rows go to rank 0, so no rank holds more than one batch's.
  auto consume = [&](PreparedBatch& next) -> Status {
    SKIFF_RETURN_IF_ERROR(AddPredictedRows(next, position, &rows, &logits, &emb));
    progress.Add(next.batch.seeds.size());
    return rows.Send();
  };
  SKIFF_RETURN_IF_ERROR(RunOwnedPass(*eval_sampler_, *data_.features, *ranges_, comm_->rank(),
                                     OwnedEvalPass(nodes, kPredictStream, nullptr), consume));
  progress.Finish();
  return rows.Finish();
}

namespace {

// Diverged (a learning rate too high) or non-finite input: nothing after this is a model.
Status CheckFinite(int64_t epoch, const EpochMetrics& m) {
  if (std::isfinite(m.loss) && std::isfinite(m.valid_loss)) return Status::Ok();
  return Status::InvalidArgument(
      "epoch " + std::to_string(epoch) + ": the " +
      (std::isfinite(m.loss) ? "validation" : "training") + " loss is " +
      std::to_string(std::isfinite(m.loss) ? m.valid_loss : m.loss) +
      ": training diverged; lower --lr, or check the features for NaN or Inf values");
}

void LogEpoch(int64_t epoch, const EpochMetrics& m, bool improved) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %lld: loss %.4f  train %.2f%%  valid %.2f%%  test %.2f%%  %.2fs "
                "(%.0f samples/s)%s",
                static_cast<long long>(epoch), m.loss, 100 * m.train_acc, 100 * m.valid_acc,
                100 * m.test_acc, m.epoch_seconds, m.samples_per_second, improved ? "  *best" : "");
  LogInfo(line);
}

}  // namespace

bool Trainer::RecordBest(int64_t epoch, const EpochMetrics& m) {
  // Best = highest validation accuracy; among equal accuracies (common on small validation sets),
  // the lower validation loss.
  const bool improved = m.valid_acc > best_valid_acc_ ||
                        (m.valid_acc == best_valid_acc_ && m.valid_loss < best_valid_loss_);
  if (improved) {
    best_valid_acc_ = m.valid_acc;
    best_valid_loss_ = m.valid_loss;
    best_test_acc_ = m.test_acc;
    best_epoch_ = epoch;
  }
  return improved;
}

Status Trainer::SaveCheckpoints(int64_t epoch, bool improved) {
  if (options_.checkpoint_path.empty()) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const Checkpoint checkpoint, MakeCheckpoint(epoch));
  return WriteEpochCheckpoints(options_.checkpoint_path, checkpoint, improved);
}

Result<TrainSummary> Trainer::Run() {
  TrainSummary summary;
  // In a data-parallel run every rank computes the same metrics and model; rank 0 writes them.
  const bool writes = comm_ == nullptr || comm_->rank() == 0;
  MetricsFile metrics;
  if (writes) SKIFF_RETURN_IF_ERROR(metrics.Open(options_.metrics_path, next_epoch_));
  for (int64_t epoch = next_epoch_; epoch < options_.epochs; ++epoch) {
    SKIFF_ASSIGN_OR_RETURN(EpochMetrics m, TrainEpoch(epoch));
    SKIFF_RETURN_IF_ERROR(CheckFinite(epoch, m));
    const bool improved = RecordBest(epoch, m);
    next_epoch_ = epoch + 1;
    if (writes) {
      SKIFF_RETURN_IF_ERROR(SaveCheckpoints(epoch, improved));
      SKIFF_RETURN_IF_ERROR(metrics.Append(m.ToJson()));
    }
    if (options_.show_progress) LogEpoch(epoch, m, improved);
    summary.epochs.push_back(m);
  }
  summary.best_epoch = best_epoch_;
  summary.best_valid_acc = best_valid_acc_ < 0 ? 0 : best_valid_acc_;
  summary.best_test_acc = best_test_acc_;
  return summary;
}

}  // namespace skiff::train
