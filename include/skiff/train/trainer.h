// Trainer: mini-batch node-classification training as a sequence of stages per batch --
// batch planning (PlanBatches), sampling (NeighborSampler over a GraphSource), feature gathering
// (FeatureSource), both run ahead by a BatchStream's worker pool, and compute (Model::TrainStep:
// forward, softmax cross-entropy, backward, Optimizer::Step) on the calling thread. A model that
// holds the features on its device (Model::HoldFeatures, offered once per run) gets node IDs
// only; one that also holds the graph there (Model::HoldGraph, TrainOptions::sampler) gets seeds,
// labels and sampler seeds, and samples on its device. The data sources are interfaces, so an
// out-of-core source plugs in without another training loop.
//
// Each epoch: train over the shuffled training nodes, then evaluate valid and test accuracy with
// eval_fanouts; write one JSON line of metrics; checkpoint the model when validation accuracy
// improves. Every random stream is derived from (seed, epoch, batch), so a run resumed from a
// checkpoint of epoch e reproduces epochs e+1.. of the uninterrupted run.
//
// Steps over several batches (TrainOptions::accumulate > 1, or a data-parallel run): each batch's
// gradients are computed alone and summed in batch order, then one optimiser step takes their mean
// (StepAccumulator). Batches come from the pass runner when one is set (so the out-of-core
// pipeline feeds such steps too): one process takes the runner's pass, every `accumulate` batches
// a step; a data-parallel rank gives the runner its share of the plan's batches
// (PassSpec::batch_numbers). Both need a model on the host.
//
// Data-parallel (SetCommunicator with size() W > 1; docs/distributed.md): every rank holds the
// same data and model. Each training pass, rank r takes batches r, r + W, ... of the one-process
// plan (ShardBatches), with their one-process batch numbers for every random stream. A step is
// accumulate rounds of W batches; after each round the ranks' gradients are all-reduced into the
// step's sum in batch order (StepAccumulator), and every rank takes the same optimiser step, so a
// W-rank run with accumulate A computes what one process computes with accumulate = W * A.
// Evaluation passes are sharded the same way and their loss totals summed.
//
// Owned partitions (SetOwnership; docs/distributed.md): each rank holds the rows of its node range
// only (TrainData's sources are its ExchangeGraph and ExchangeFeatures). Every pass runs the
// one-process plan's batches, each split among the ranks by who owns its seeds (owned_pass.h),
// one part at a time on the calling thread. A step is `accumulate` plan batches (1 by default):
// each rank's part's gradient (its mean loss) weighted by its share of the batch's labelled seeds,
// summed over the step's batches and then over the ranks in rank order, so the step's gradient is
// what one process computes for those batches, up to the order of the floating-point sums. Rank 0
// alone writes metrics and checkpoints. A failed collective ends Run() with its Status (the caller
// aborts the job).
//
// Thread safety: a Trainer is driven by one thread; it starts its own sampler threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/model/model.h"
#include "skiff/progress.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/status.h"
#include "skiff/train/batch_stream.h"
#include "skiff/train/checkpoint.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_pass.h"
#include "skiff/train/step_accumulator.h"
#include "skiff/train/train_options.h"

namespace skiff::train {

class RowsToLead;  // train/gather_rows.h

// Everything a run trains on. Sources must outlive the Trainer.
struct TrainData {
  const sampler::GraphSource* graph = nullptr;
  const sampler::FeatureSource* features = nullptr;
  // The whole CSR, read range by range, for a model that samples on its device (may be null:
  // then batches are sampled on the host).
  const sampler::CsrSource* csr = nullptr;
  std::vector<int32_t> labels;  // size num_nodes, -1 = unlabelled
  int64_t num_classes = 0;
  std::vector<int64_t> train, valid, test;
};

// Owns in-memory sources loaded from a dataset.
struct InMemoryData {
  std::unique_ptr<sampler::InMemoryGraph> graph;
  std::unique_ptr<sampler::InMemoryFeatures> features;
  TrainData data;
};
Result<std::unique_ptr<InMemoryData>> LoadInMemory(const format::Dataset& dataset);

struct EpochMetrics {
  int64_t epoch = 0;
  double loss = 0, train_acc = 0, valid_acc = 0, test_acc = 0;
  double valid_loss = 0;  // mean cross-entropy over the validation nodes
  double epoch_seconds = 0, samples_per_second = 0;
  double sample_seconds = 0, gather_seconds = 0, compute_seconds = 0, eval_seconds = 0;
  double compute_wait_seconds = 0;  // compute stage waiting for sampled batches
  std::string pipeline_json;        // the pass runner's report of the training pass, or ""
  std::string ToJson() const;
};

// The end-of-pass line a Trainer prints for a training pass through its BatchStream (no pass
// runner; a runner prints its own stage report): the stream's busy time (`threads` workers), the
// compute step's busy time and its wait for batches, and which of the two bounds the pass -- the
// stream when compute waited for over a tenth of the pass. `sampled_on_device`: the stream only
// hands over seeds and labels, and the model samples.
std::string StreamPassReport(const EpochMetrics& m, double pass_seconds, int threads,
                             bool sampled_on_device);

struct TrainSummary {
  std::vector<EpochMetrics> epochs;  // epochs run by this call
  int64_t best_epoch = -1;
  double best_valid_acc = 0, best_test_acc = 0;
};

// One pass over a node set -- a training epoch or an evaluation -- as the compute step sees it.
struct PassSpec {
  const std::vector<int64_t>* nodes = nullptr;
  bool training = false;  // training fanouts and shuffled order; else evaluation fanouts
  uint64_t stream = 0;    // the random stream of the pass (training, valid, test)
  int64_t epoch = 0;
  int64_t batch_size = 0;
  // The model takes its first layer's input aggregated: a runner may hand batches over in that
  // form (PreparedBatch::aggregated), with the first layer's input dropout (`input_dropout`,
  // training passes) masked from `dropout_seed(index)`, the seed the batch's Forward gets.
  model::InputAggregation aggregation = model::InputAggregation::kNone;
  float input_dropout = 0;
  std::function<uint64_t(int64_t index)> dropout_seed = nullptr;
  // False when the model gathers the input rows itself (it holds the features on its device):
  // batches then come without features (PreparedBatch::features empty).
  bool gather_features = true;
  // The same pass (nodes, stream, batch size; evaluation, epoch 0's stream) runs again later with
  // the model's later state: a runner may keep its batches and replay them then.
  bool repeats = false;
  // Evaluation only: further node sets in the same pass, each with its own stream. Each set's
  // batches are those of a pass over it alone (its stream, batch indices from 0), handed over
  // after those of the sets before it, with PreparedBatch::part = 1 + its position here (0:
  // `nodes`). A runner may share work between the sets: the out-of-core one reads the feature
  // file for them together.
  struct MoreNodes {
    const std::vector<int64_t>* nodes = nullptr;
    uint64_t stream = 0;
  };
  std::vector<MoreNodes> more = {};
  // A data-parallel rank's share of a plan (not with `more`): `nodes` holds its batches one after
  // the other, each `batch_size` seeds but possibly the last, batch i numbered
  // (*batch_numbers)[i] in the plan and sampled as that batch of `stream`. The runner hands them
  // over in this order, with PreparedBatch::index their position here (not their number), and
  // cuts none of them: an evaluation's `batch_size` must be within the runner's limit (Trainer::
  // SetEvalBatchLimit). Null: the runner plans the batches of `nodes` itself.
  const std::vector<uint64_t>* batch_numbers = nullptr;
  // The pass the caller will ask for right after this one, when it knows (a hint: a runner may
  // start preparing it while this one ends; the Trainer names its evaluation after a training
  // pass). The runner must not depend on it: the next call may be another pass.
  std::shared_ptr<const PassSpec> then = nullptr;
};
// Runs a pass: hands every batch -- sampled, labelled, features gathered -- to `consume` in
// batch order, and returns the first error (its own or consume's). May describe the pass as a
// JSON object in *report_json. The default is a BatchStream over TrainData's sources; the
// out-of-core pipeline installs its own (pipeline/trainer_passes.h).
using PassRunner =
    std::function<Status(const PassSpec& pass, const std::function<Status(PreparedBatch&)>& consume,
                         std::string* report_json)>;

using ModelFactory =
    std::function<Result<std::unique_ptr<model::Model>>(const model::ModelConfig&)>;

class Trainer {
 public:
  // InvalidArgument on inconsistent options (fanouts vs layers, empty training set, ...).
  // `factory` defaults to Model::CreateCpu.
  static Result<std::unique_ptr<Trainer>> Create(const TrainData& data, TrainOptions options,
                                                 ModelFactory factory = nullptr);

  // Restores parameters, optimiser state, epoch and best result. InvalidArgument when the
  // checkpoint's parameters do not match this model.
  Status Restore(const Checkpoint& checkpoint);
  // Trains the remaining epochs (from the restored epoch + 1, or 0). InvalidArgument, naming the
  // epoch, when a training or validation loss is not finite (diverged, or NaN/Inf features): no
  // checkpoint or metrics line is written for that epoch.
  Result<TrainSummary> Run();

  // Accuracy and mean cross-entropy over the labelled nodes of `nodes`, with eval fanouts (model
  // in inference mode).
  struct Evaluation {
    double accuracy = 0, loss = 0;
  };
  // `repeats`: a later epoch evaluates the same nodes again (PassSpec::repeats). Each batch's
  // seeds are counted into `progress` when it is not null.
  Result<Evaluation> Evaluate(const std::vector<int64_t>& nodes, uint64_t stream,
                              bool repeats = false, Progress* progress = nullptr);
  // Predicted class and final-layer embedding (EmbeddingDim wide) of every node in `nodes`
  // (distinct ids), in the order of `nodes`, through the pass runner when one is set.
  // Owned partitions: every rank calls it with the same `nodes`, each computes the nodes it owns
  // (the one-process plan's batches of `nodes`, each split by owner, as evaluation), and rank 0
  // receives every node's rows (RowsToLead, after each plan batch); the other ranks' outputs are
  // left empty. Replicated data-parallel ranks (SetCommunicator of several ranks): every rank
  // calls it with the same `nodes` and computes its share of the one-process plan's batches, as
  // evaluation shares them; rank 0 receives every node's rows once the shares are done
  // (RowsToLead::SendAll: until then each rank holds its share's rows, 8 + 4 * (EmbeddingDim + 1)
  // bytes per node, outside any memory budget as rank 0's outputs are).
  Status Predict(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                 std::vector<float>* embeddings);

  // Offers the features to the model's device (Model::HoldFeatures within
  // TrainOptions::device_memory_bytes) the first time it is called -- training, evaluation and
  // prediction call it -- and returns whether the model holds them. Then, as TrainOptions::sampler
  // asks, the graph (Model::HoldGraph; TrainData::csr): with kDevice, InvalidArgument when the
  // model cannot sample on its device and ResourceExhausted when it does not take the graph (too
  // large, or fanouts beyond the device sampler's).
  Result<bool> OfferFeatures();

  // Replaces how training and evaluation passes produce their batches (see PassRunner). A model
  // that samples on its device (Model::samples_on_device) needs seeds and labels only, and takes
  // them from a BatchStream whatever the runner (nothing for the runner to read or plan).
  void SetPassRunner(PassRunner runner) { pass_runner_ = std::move(runner); }
  // Computes each training batch in `parts` micro-batches (Model::ComputeGradientsInParts; the
  // memory plan's choice, pipeline::MemoryPlan::micro_batches) instead of
  // TrainOptions::micro_batches, and evaluation and prediction batches in parts of at most
  // `eval_part_seeds` seeds (0: whole). A model on the host only (the caller's to ensure).
  void SetMicroBatches(int parts, int64_t eval_part_seeds = 0) {
    micro_batches_ = std::max(1, parts);
    eval_part_seeds_ = std::max<int64_t>(0, eval_part_seeds);
  }
  // The largest evaluation batch the pass runner takes (its budget's; 0: no limit): evaluation
  // and prediction batches are cut at the smaller of it and TrainOptions::eval_batch_size, so that
  // a data-parallel rank's share, which the runner does not cut (PassSpec::batch_numbers), holds
  // the batches one process evaluates.
  void SetEvalBatchLimit(int64_t seeds) { eval_batch_limit_ = std::max<int64_t>(0, seeds); }
  // Makes the run data-parallel over `comm`'s ranks (which must outlive the Trainer; null: one
  // process). InvalidArgument when TrainOptions::world_size is not comm->size().
  Status SetCommunicator(dist::Communicator* comm);
  // Makes the data-parallel run owned-partition over `ranges` (which must outlive the Trainer;
  // ranges->size() == the communicator's size, set first). TrainData's graph and features must be
  // this rank's exchange sources (exchange_graph.h, exchange_features.h), its labels and node
  // splits every node's. With their traffic counters (which must outlive the Trainer), each
  // training pass reports what the ranks fetched from each other (EpochMetrics::pipeline_json,
  // and a log line). InvalidArgument for a model that does not compute on the host.
  Status SetOwnership(const NodeRanges* ranges, const ExchangeTraffic* graph_traffic = nullptr,
                      const ExchangeTraffic* feature_traffic = nullptr);
  // Owned-partition runs: each training part's BatchDigestLine, as it is computed, to `sink`.
  void SetBatchDigest(std::function<Status(const std::string& line)> sink) {
    digest_ = std::move(sink);
  }

  // The model's and optimiser's state after `epoch` (copied back from the model's device).
  Result<Checkpoint> MakeCheckpoint(int64_t epoch);
  model::Model& model() { return *model_; }
  const TrainOptions& options() const { return options_; }

 private:
  Trainer(const TrainData& data, TrainOptions options)
      : data_(data), options_(std::move(options)) {}
  Result<EpochMetrics> TrainEpoch(int64_t epoch);
  // Whether epoch's metrics are the best so far (validation accuracy, then loss); keeps them if so.
  bool RecordBest(int64_t epoch, const EpochMetrics& m);
  // With a checkpoint path: the best model there when `improved`, and the last epoch's state
  // beside it (LastCheckpointPath) for --resume.
  Status SaveCheckpoints(int64_t epoch, bool improved);
  // The evaluation batches of `nodes` (epoch 0, eval batch size) through `consume`: by the pass
  // runner when there is one (PassSpec::repeats = `repeats`), else by a BatchStream whose batches
  // carry `labels` (null: -1).
  // Without a pass runner, a data-parallel run takes the rank's share of the batches when
  // `shard` (evaluation), every batch otherwise (prediction).
  Status RunEvalBatches(const std::vector<int64_t>& nodes, uint64_t stream_id, bool repeats,
                        bool shard, const std::vector<int32_t>* labels,
                        const std::function<Status(PreparedBatch&)>& consume);
  // The training batches of `epoch` through `consume`: by the pass runner when there is one (its
  // report into m->pipeline_json), else by a BatchStream (its stage times into *m).
  Status RunTrainingPass(int64_t epoch, const std::function<Status(PreparedBatch&)>& consume,
                         const std::function<uint64_t(int64_t)>& dropout_seed, EpochMetrics* m);
  // Validation and test accuracy (and validation loss) after an epoch, into *m.
  Status EvaluateSplits(EpochMetrics* m);
  // Evaluate() of two node sets in one pass of the pass runner (PassSpec::more): the same results
  // as two Evaluate() calls.
  Result<std::array<Evaluation, 2>> EvaluateBoth(const std::vector<int64_t>& first,
                                                 uint64_t first_stream,
                                                 const std::vector<int64_t>& second,
                                                 uint64_t second_stream, bool repeats,
                                                 Progress* progress);
  // The pass EvaluateBoth asks the runner for.
  PassSpec EvaluateBothPass(const std::vector<int64_t>& first, uint64_t first_stream,
                            const std::vector<int64_t>& second, uint64_t second_stream,
                            bool repeats) const;
  // Whether passes go through the pass runner (one is set and the model samples on the host; a
  // data-parallel rank gives it its share of each pass, RunShare).
  bool RunsPasses() const;
  // Batches per optimiser step: TrainOptions::accumulate, times the ranks of a data-parallel run.
  int64_t StepBatches() const;
  // The accumulator of steps over several batches (made on first use), or null when every step
  // is one batch of one process.
  StepAccumulator* Steps();
  bool Distributed() const { return comm_ != nullptr && comm_->size() > 1; }
  bool Owned() const { return ranges_ != nullptr; }
  // An owned-partition training part: its gradient, weighted by its share of the plan batch's
  // labelled seeds, into the step's sum (nothing for a part without labelled seeds).
  Status AddOwnedPart(const PreparedBatch& next, uint64_t dropout_seed);
  // A data-parallel rank's share of `pass` through the pass runner: `batches` (the plan's,
  // numbered `numbers`) one after the other (PassSpec::batch_numbers), each handed to `consume`
  // with its plan number as PreparedBatch::index, the runner's dropout seeds taken by number too.
  Status RunShare(PassSpec pass, std::vector<std::vector<int64_t>> batches,
                  const std::vector<uint64_t>& numbers,
                  const std::function<Status(PreparedBatch&)>& consume, std::string* report_json);
  // TrainOptions::eval_batch_size within SetEvalBatchLimit's limit.
  int64_t EvalBatchSize() const {
    return eval_batch_limit_ > 0 ? std::min(options_.eval_batch_size, eval_batch_limit_)
                                 : options_.eval_batch_size;
  }
  // A prediction batch's rows into `rows` (RowsToLead), each seed's at position[seed]; nothing to
  // compute for a part without seeds. `logits` and `emb` are scratch.
  Status AddPredictedRows(PreparedBatch& next, const std::vector<int64_t>& position,
                          RowsToLead* rows, std::vector<float>* logits, std::vector<float>* emb);
  // Predict of replicated data-parallel ranks.
  Status PredictShared(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                       std::vector<float>* embeddings);
  // Predict of an owned-partition run.
  Status PredictOwned(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                      std::vector<float>* embeddings);
  // An owned-partition evaluation or prediction pass over `nodes` (epoch 0, the evaluation
  // batch size), its seeds' labels from `labels` (null: -1).
  OwnedPassSpec OwnedEvalPass(const std::vector<int64_t>& nodes, uint64_t stream_id,
                              const std::vector<int32_t>* labels) const;
  // RunTrainingPass of an owned-partition run (owned_pass.h), with its exchanges' report.
  Status RunOwnedTrainingPass(int64_t epoch, const std::function<Status(PreparedBatch&)>& consume,
                              EpochMetrics* m);
  // The batches this process runs of a pass over `nodes` and their numbers in the pass: all of
  // them in one process, the rank's share (ShardBatches) in a data-parallel run.
  std::vector<std::vector<int64_t>> OwnBatches(const std::vector<int64_t>& nodes,
                                               int64_t batch_size, bool shuffle, uint64_t epoch,
                                               std::vector<uint64_t>* numbers) const;
  // The training seeds this process trains on per epoch (its batches' in a data-parallel run).
  uint64_t OwnSeeds() const;
  // The nodes of `nodes` this process evaluates (its share in a data-parallel run).
  uint64_t OwnEvalNodes(const std::vector<int64_t>& nodes) const;
  // The current epoch's training nodes: all of them, or the epoch's subset (--epoch-fraction).
  const std::vector<int64_t>& TrainNodes() const {
    return options_.epoch_fraction < 1 ? epoch_train_ : data_.train;
  }
  // Loss totals summed over the ranks (as they are in one process).
  Status ReduceTotals(model::LossTotals* totals);
  // Whether EvaluateSplits evaluates validation and test in one pass (EvaluateBoth).
  bool EvaluatesSplitsTogether() const;
  // OfferFeatures' second half: the graph, as TrainOptions::sampler asks.
  Status OfferGraph(bool features_held);
  // A pass over `nodes`, offering aggregated input when the model takes it.
  PassSpec MakePassSpec(const std::vector<int64_t>* nodes, bool training, uint64_t stream,
                        int64_t epoch, int64_t batch_size) const;
  // The model's input for a prepared batch: rows, aggregated rows, (features held by the model)
  // node IDs only, or (PreparedBatch::unsampled) seeds the model samples with `fanouts`.
  model::BatchInput InputOf(const PreparedBatch& next, const std::vector<int>& fanouts);

  const TrainData& data_;
  std::vector<int64_t> epoch_train_;  // with --epoch-fraction: TrainEpoch's subset
  TrainOptions options_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<model::Optimizer> optimizer_;
  std::unique_ptr<sampler::NeighborSampler> train_sampler_, eval_sampler_;
  PassRunner pass_runner_;        // empty: BatchStream
  int micro_batches_ = 1;         // parts per training batch (SetMicroBatches)
  int64_t eval_part_seeds_ = 0;   // seeds per evaluation part, 0: whole batches
  int64_t eval_batch_limit_ = 0;  // SetEvalBatchLimit's
  // The parts an evaluation batch of `seeds` seeds is computed in (eval_part_seeds_).
  int EvalParts(size_t seeds) const {
    return eval_part_seeds_ > 0
               ? static_cast<int>((static_cast<int64_t>(seeds) + eval_part_seeds_ - 1) /
                                  eval_part_seeds_)
               : 1;
  }
  dist::Communicator* comm_ = nullptr;                // null: one process
  const NodeRanges* ranges_ = nullptr;                // owned partitions (SetOwnership), else null
  const ExchangeTraffic* graph_traffic_ = nullptr;    // SetOwnership's (may be null)
  const ExchangeTraffic* feature_traffic_ = nullptr;  // SetOwnership's (may be null)
  std::function<Status(const std::string&)> digest_;  // SetBatchDigest
  std::unique_ptr<StepAccumulator> steps_;            // Steps()
  bool features_offered_ = false;
  model::DeviceSampling device_sampling_;  // InputOf's, for the batch being computed
  int64_t next_epoch_ = 0;
  int64_t best_epoch_ = -1;
  double best_valid_acc_ = -1, best_test_acc_ = 0;
  double best_valid_loss_ = std::numeric_limits<double>::infinity();
};

}  // namespace skiff::train
