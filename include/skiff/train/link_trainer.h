// LinkTrainer: link prediction -- an encoder (SAGE, GCN or GAT: model::Model, its last layer
// LinkOptions::out_dim wide) and a decoder (model::LinkDecoder) trained on the positive edges of
// the dataset's edge split against sampled negatives, evaluated on its held-out edges.
//
// Every pass -- a training epoch, or the evaluation of a split -- is a list of edge batches
// (train/link_batches.h) whose distinct nodes are the seeds of one sampled mini-batch each. A
// LinkPassRunner samples those seeds (training or evaluation fanouts) and gathers their input rows,
// exactly as node classification does for its seeds: the default runs a BatchStream over
// LinkData's sources; `skiff train` installs the out-of-core pipeline's (pipeline/link_passes.h),
// with or without a memory budget. So the encoder runs once per node of a batch.
//
// Training step: Forward over the batch, the decoder's loss and its gradient with respect to the
// node representations, the encoder's Backward, and one optimiser step for both (the decoder's
// parameters on the host with the same optimiser settings). With TrainOptions::accumulate > 1,
// or data-parallel (SetCommunicator), a step sums several batches' gradients first, as
// Trainer does (train/step_accumulator.h).
//
// Evaluation after each epoch, in batches of at most `batch_size` held-out edges
// (SetEvalBatchEdges; the first eval_edges of each split, or all) with the evaluation fanouts and
// no dropout: AUC and AP of the positives against the split's stored non-edges (the GAE protocol,
// when the dataset has them), and with eval_negatives > 0 MRR and Hits@K of each positive among
// eval_negatives candidate destinations drawn uniformly from the seed and shared by each group of
// kCandidateGroupEdges positives (DrawCandidates: the same every epoch, whatever the batches),
// raw or filtered (LinkOptions::ranking). Sharing keeps an evaluation batch's node set bounded by
// the batch (out of core, the whole graph's representations would not fit a budget); each positive
// is still ranked among eval_negatives uniform candidates, as in OGB's protocol. The best epoch has
// the highest validation MRR (AUC without ranking).
//
// Checkpoints (options.checkpoint_path, train/checkpoint.h) hold the encoder's and the decoder's
// parameters (the decoder's named "decoder.*") and optimiser state, the best key (validation MRR,
// or AUC) as best_valid_acc and the best epoch's evaluation as best_metrics_json: the best model
// at the path, the last finished epoch's state beside it (LastCheckpointPath). Every random stream
// derives from (seed, epoch, batch), so Restore + Run continues the uninterrupted run exactly.
// Encode computes the encoder's output for given nodes (embeddings for export and prediction).
//
// Thread safety: driven by one thread; runners may use their own threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/model/link_decoder.h"
#include "skiff/model/model.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/status.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/batch_stream.h"
#include "skiff/train/checkpoint.h"
#include "skiff/train/link_batches.h"
#include "skiff/train/link_metrics.h"
#include "skiff/train/step_accumulator.h"
#include "skiff/train/train_options.h"
#include "skiff/train/trainer.h"

namespace skiff::train {

// What link prediction trains on. Pairs are interleaved (src, dst) node IDs (format/dataset.h,
// kLink*File). Sources must outlive the trainer.
struct LinkData {
  // The message-passing graph: its rows filter rankings (Ranking::kFiltered), and the default
  // runner samples from it and gathers from `features`.
  const sampler::GraphSource* graph = nullptr;
  const sampler::FeatureSource* features = nullptr;
  const sampler::CsrSource* csr = nullptr;  // the same graph as a CSR (degree negatives)
  bool undirected = false;  // split pairs stand for both directions (filtered ranking)
  std::vector<int64_t> train, valid, test;  // positives
  // Set where `train` is left empty: the training pairs, loaded when needed -- by
  // LinkTrainer::Create for its checks and by each epoch's plan -- and freed once used. The
  // out-of-core engine releases them under a budget: an epoch's plan says all its pass needs.
  std::function<Result<std::vector<int64_t>>()> reload_train = nullptr;
  std::vector<int64_t> valid_neg, test_neg;  // non-edges (may be empty)
  // The dataset's ranking candidates: `candidates` per valid / test pair, row-major in pair
  // order (LinkSplitInfo::candidates; 0: none).
  int64_t candidates = 0;
  std::vector<int64_t> valid_cand, test_cand;
};

// Loads the edge split: the pairs, and the manifest's word on direction; with held_out_pairs >=
// 0, of each held-out file (valid, test, their non-edges and candidates) only the rows of the
// first held_out_pairs pairs, read alone (ScoredPairs: what evaluation scores). InvalidArgument,
// saying how to make one, when the dataset has no edge split.
Status LoadEdgeSplit(const format::Dataset& dataset, LinkData* data, int64_t held_out_pairs = -1);

// The held-out pairs of each split that evaluation under `options` scores: the first
// LinkOptions::eval_edges when that is set and ranking is raw; -1 (all) otherwise (filtered
// ranking looks every split edge up).
int64_t ScoredPairs(const TrainOptions& options);

// Drops the held-out pairs and non-edges that evaluation under `options` never scores: past the
// first LinkOptions::eval_edges of each split, when that is set and ranking is raw (filtered
// ranking looks every split edge up). On the 2M-node link benchmark with --eval-edges 10000 that
// is 18 MiB of the 25% budget's resident IDs.
void DropUnscoredPairs(const TrainOptions& options, LinkData* data);

// Whether held-out edges are ranked among the dataset's candidates under `options`: it has them,
// ranking is on (eval_negatives > 0) and eval_candidates is kDataset.
bool UsesDatasetCandidates(const LinkData& data, const TrainOptions& options);

// The training pairs of `data`: data.train, or data.reload_train()'s into *held (which then
// holds them) when that is set. IOError/Corruption from the reload.
Result<std::span<const int64_t>> TrainPairsOf(const LinkData& data, std::vector<int64_t>* held);

// The decoder `options` train: LinkOptions' kind and out_dim, the model's hidden width, the seed.
model::DecoderConfig DecoderConfigOf(const TrainOptions& options);
// The loss scratch of one training batch (model::LossScratchBytes) for its largest node set:
// 2 x batch-size ends and the negatives, at most every node of a graph of `num_nodes`.
int64_t TrainingLossScratchBytes(const TrainOptions& options, int64_t num_nodes);
// Whether the decoder and loss of `options` can train on a graph of `num_nodes`: InvalidArgument
// for gae with mlp (model::CheckLossFor) and for gae batches whose scores alone would not fit in
// the machine's memory, naming the options to lower. LinkTrainer::Create checks it; a caller may
// check first, from the manifest, before loading anything.
Status CheckLinkLoss(const TrainOptions& options, int64_t num_nodes);

// One pass as the runner sees it: batch b's seeds are seeds[b] (distinct node IDs), sampled with
// the training fanouts when `training`, else the evaluation fanouts, with sampler seed
// BatchSeed(seed, stream, epoch, b) (the default runner) or the out-of-core pipeline's.
// The model takes its first layer's input aggregated (`aggregation`, kMean for GraphSAGE on the
// CPU): a runner may hand batches over in that form (PreparedBatch::aggregated), the first layer's
// input dropout (`input_dropout`, training) masked from `dropout_seed(b)`, the seed the batch's
// Forward gets -- as train::PassSpec says for node classification.
struct LinkPassSpec {
  bool training = false;
  uint64_t stream = 0;
  int64_t epoch = 0;
  std::vector<std::vector<int64_t>> seeds;
  model::InputAggregation aggregation = model::InputAggregation::kNone;
  float input_dropout = 0;
  std::function<uint64_t(int64_t batch)> dropout_seed = nullptr;
  // Batch b samples as batch number batch_numbers[b] of the pass's stream (empty: as batch b).
  std::vector<uint64_t> batch_numbers;
  // False: batches come without feature rows (the model holds them on its device).
  bool gather_features = true;
};
// Hands every batch of `pass`, sampled and gathered (PreparedBatch::features: one float row per
// batch.input_nodes, or aggregated; none without pass.gather_features), to `consume` in batch order
// (PreparedBatch::index = b); returns the first error. May describe the pass as a JSON object in
// *report_json. The runner owns the pass: the trainer hands over its only copy of the pass's seeds
// (an epoch's plan), which the out-of-core runner moves into its own plan rather than copy.
using LinkPassRunner =
    std::function<Status(LinkPassSpec pass, const std::function<Status(PreparedBatch&)>& consume,
                         std::string* report_json)>;

// The metrics of one split.
struct LinkEvaluation {
  int64_t edges = 0;  // evaluated
  bool has_non_edges = false;
  double auc = 0, ap = 0;  // against the stored non-edges
  // HitsAgainstNegatives over the stored non-edges at kSharedHitsAt (OGB's protocol when the
  // non-edges are an OGB split's edge_neg).
  std::array<double, kSharedHitsAt.size()> shared_hits{};
  RankingMetrics ranking;  // count 0 without eval_negatives
  // "valid_auc": .., ... as JSON members (no braces).
  std::string JsonMembers(const std::string& prefix) const;
};

struct LinkEpochMetrics {
  int64_t epoch = 0;
  double loss = 0;  // mean training loss over the epoch's batches
  LinkEvaluation valid, test;
  double epoch_seconds = 0, edges_per_second = 0, eval_seconds = 0;
  double compute_seconds = 0;  // the training step's own time
  std::string pipeline_json;   // the runner's report of the training pass, or ""
  std::string ToJson() const;
};

// The best epoch's evaluation as the checkpoint keeps it (Checkpoint::best_metrics_json), and back.
// Corruption naming the member when the JSON is not such an object.
std::string BestMetricsJson(const LinkEvaluation& valid, const LinkEvaluation& test);
Status ParseBestMetrics(const std::string& json, LinkEvaluation* valid, LinkEvaluation* test);

// Receives the encoder's output for a batch of nodes: rows[i * out_dim ...] is nodes[i]'s.
using EmbeddingSink = std::function<Status(std::span<const int64_t> nodes, const float* rows)>;

struct LinkSummary {
  std::vector<LinkEpochMetrics> epochs;
  int64_t best_epoch = -1;
  LinkEvaluation best_valid, best_test;
};

class LinkTrainer {
 public:
  // InvalidArgument on inconsistent options (fanouts vs layers, no training edges, a pair outside
  // the graph, ...). `factory` defaults to Model::CreateCpu; the encoder's num_classes is
  // options.link.out_dim.
  static Result<std::unique_ptr<LinkTrainer>> Create(const LinkData& data, TrainOptions options,
                                                     ModelFactory factory = nullptr);

  // Makes the run data-parallel over `comm`'s ranks (which must outlive the trainer; null: one
  // process), as Trainer::SetCommunicator does for node classification: rank r trains the
  // epoch's edge batches r, r + W, ... (each sampled as its plan number), a step is
  // TrainOptions::accumulate rounds of one batch per rank, the encoder's and the decoder's
  // gradients summed in batch order (step_accumulator.h), so W ranks with accumulate A compute what
  // one process computes with accumulate W * A. Every rank evaluates every split (the same
  // metrics; none waits on another past --dist-timeout while rank 0 evaluates); rank 0 alone
  // writes metrics and checkpoints. A model on the host only. InvalidArgument when
  // TrainOptions::world_size is not comm->size().
  Status SetCommunicator(dist::Communicator* comm);
  // Replaces the default BatchStream runner (see LinkPassRunner).
  void SetPassRunner(LinkPassRunner runner) { runner_ = std::move(runner); }
  // Offers every feature row to the model's device (Model::HoldFeatures within `device_bytes`; 0:
  // what the device has free less a margin). When it takes them, later passes hand over node IDs
  // only and the model gathers the rows itself. Returns whether the model holds them (false, at
  // no cost, for a CPU model). Errors: reading the features.
  Result<bool> OfferFeatures(uint64_t device_bytes);
  // Held-out edges per evaluation batch (default: options.batch_size), e.g. what a memory budget
  // allows an evaluation batch (pipeline/link_passes.h). > 0.
  void SetEvalBatchEdges(int64_t edges) {
    SKIFF_CHECK(edges > 0);
    eval_batch_edges_ = edges;
  }

  // Representations held at once while pairs are ranked among the dataset's candidates
  // (CandidateRankingInput::chunk_bytes; default 0: all of them), e.g. what a memory budget
  // reserves for them (pipeline/link_passes.h).
  void SetCandidateChunkBytes(uint64_t bytes) { candidate_chunk_bytes_ = bytes; }

  // Trains the epochs from the next one (0, or after the restored checkpoint's) to
  // options.epochs, evaluating after each; writes the metrics lines (options.metrics_path; a
  // resumed run continues the file) and the checkpoints. InvalidArgument, naming the epoch, when
  // the loss is not finite. The summary's best is over every epoch, restored ones included.
  Result<LinkSummary> Run();
  // The state after `epoch` finished: parameters, optimiser state, the best result so far.
  Result<Checkpoint> MakeCheckpoint(int64_t epoch);
  // Restores a checkpoint of this model (MakeCheckpoint's); InvalidArgument when its parameters
  // or optimiser state do not match, Corruption for malformed best metrics. Nothing changes on
  // error.
  Status Restore(const Checkpoint& checkpoint);
  int64_t next_epoch() const { return next_epoch_; }
  // The encoder's output for the nodes of `batches`, handed to `sink` batch by batch, in that
  // order. Batch c is the nodes [c * batch_nodes, (c + 1) * batch_nodes) of the graph (fewer in
  // the last), sampled with the evaluation fanouts as batch number c of stream kPredictStream, no
  // dropout: a node's output depends on the model, the seed and batch_nodes, never on which
  // batches are asked for -- so embeddings, pair scores and top-k candidates agree. (With sampled
  // evaluation fanouts a node's neighbourhood depends on its batch, as in evaluation; with every
  // neighbour (-1) it does not depend on batch_nodes either.) InvalidArgument for a batch past the
  // last.
  Status EncodeBatches(std::span<const int64_t> batches, int64_t batch_nodes,
                       const EmbeddingSink& sink);
  // One training epoch (its metrics, evaluation not included).
  Result<LinkEpochMetrics> TrainEpoch(int64_t epoch);
  // The metrics of held-out `pairs` and `non_edges` with the current model, the evaluation batches
  // and candidates drawn from stream `stream` (kValidStream, kTestStream) -- or, when the
  // dataset's are used (UsesDatasetCandidates), each pair ranked among its row of `candidates`
  // (RankAmongGiven).
  Result<LinkEvaluation> Evaluate(const std::vector<int64_t>& pairs,
                                  const std::vector<int64_t>& non_edges, uint64_t stream,
                                  const std::vector<int64_t>& candidates = {});
  // Whether held-out edges are ranked among the dataset's candidates: it has them, ranking is on
  // (eval_negatives > 0) and eval_candidates is kDataset.
  bool UsesDatasetCandidates() const;

  model::Model& model() { return *model_; }
  model::LinkDecoder& decoder() { return *decoder_; }
  const TrainOptions& options() const { return options_; }

 private:
  LinkTrainer(const LinkData& data, TrainOptions options)
      : data_(data), options_(std::move(options)) {}
  // A pass over `seeds`, offering aggregated input when the model takes it.
  LinkPassSpec MakePass(bool training, uint64_t stream, int64_t epoch) const;
  // Forward over a prepared batch (rows or aggregated rows) into step_out_.
  Status ForwardPrepared(const PreparedBatch& prepared, bool training, uint64_t dropout_seed);
  Status RunPass(LinkPassSpec pass, const std::function<Status(PreparedBatch&)>& consume,
                 std::string* report_json);
  // The gradients of the encoder and the decoder for a prepared batch of `edges` (its loss):
  // `rows` seeds (edges.seeds went to the pass), which the batch's positives and negatives index.
  Result<double> ComputeGradients(const PreparedBatch& prepared, const EdgeBatch& edges,
                                  int64_t rows, uint64_t dropout_seed);
  // One optimiser update of the encoder and the decoder from their gradients.
  Status ApplyUpdate();
  // The encoder's parameters, then the decoder's.
  std::vector<model::Parameter> AllParameters();
  bool Distributed() const { return comm_ != nullptr && comm_->size() > 1; }
  // Batches per optimiser step: TrainOptions::accumulate, times the ranks of a data-parallel run.
  int64_t StepBatches() const {
    return options_.accumulate * (comm_ == nullptr ? 1 : comm_->size());
  }
  // The accumulator of steps over several batches (made on first use; StepBatches() > 1).
  StepAccumulator& Steps();
  // Scores one evaluation batch into the split's accumulators.
  struct SplitScores;
  Status ScoreEvalBatch(const PreparedBatch& prepared, const EvalEdgeBatch& batch,
                        SplitScores* scores);
  // Records the epoch's evaluation when it is the best so far; whether it was.
  bool RecordBest(int64_t epoch, const LinkEpochMetrics& m);
  Status SaveCheckpoints(int64_t epoch, bool improved);
  // Whether c is a known destination of s: an edge of the graph (`row`: s's sorted row) or of a
  // split (filtered ranking).
  bool KnownEdge(int64_t s, int64_t c, const std::vector<int64_t>& row) const;
  // Ranks each of the first `count` pairs among its own row of `candidates` (data_.candidates
  // per pair): RankAmongCandidates over EncodeBatches' node batches (eval_batch_size nodes each)
  // and the decoder's scores, candidate_chunk_bytes_ of representations at a time.
  Status RankAmongGiven(const std::vector<int64_t>& pairs, int64_t count,
                        const std::vector<int64_t>& candidates, RankingAccumulator* ranks);
  // Ranks of one pair's scores (`candidates` of source s), filtered when asked, into *ranks.
  Status AddRank(int64_t s, float positive, std::span<const float> candidates,
                 std::span<const int64_t> candidate_nodes, RankingAccumulator* ranks);

  const LinkData& data_;
  TrainOptions options_;
  dist::Communicator* comm_ = nullptr;      // a data-parallel run's (SetCommunicator)
  std::unique_ptr<StepAccumulator> steps_;  // Steps()
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<model::Optimizer> optimizer_;
  std::unique_ptr<model::LinkDecoder> decoder_;
  std::vector<std::vector<float>> decoder_state_;  // optimiser state of the decoder's parameters
  int64_t decoder_steps_ = 0;
  int64_t eval_batch_edges_ = 0;  // 0: options_.batch_size
  uint64_t candidate_chunk_bytes_ = 0;
  std::unique_ptr<sampler::NeighborSampler> train_sampler_, eval_sampler_;
  LinkPassRunner runner_;                    // empty: a BatchStream over LinkData's sources
  std::vector<uint64_t> split_edges_;        // filtered ranking: every split pair's key, sorted
  std::vector<float> step_out_, step_grad_;  // reused across steps
  int64_t next_epoch_ = 0;
  double best_key_ = -1;  // validation MRR (AUC without ranking) of best_epoch_
  int64_t best_epoch_ = -1;
  LinkEvaluation best_valid_, best_test_;
};

}  // namespace skiff::train
