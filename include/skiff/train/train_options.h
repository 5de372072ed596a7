// The options of a training run, declared once. TrainOptions holds their values and defaults;
// TrainOptionTable() lists every option a user sets -- its name, help text, scope, how its value
// reads and prints -- and drives all three places options travel:
//   - the command line and TOML files: `skiff train` adds one `--NAME` per entry, and a TOML key
//     NAME is the same option (tools/skiff/config_file.h);
//   - checkpoints: TrainOptions::ToJson/FromJson save and read every run-scoped entry under NAME
//     with '-' spelt '_' ("batch-size" -> "batch_size"), as JSON numbers, strings (enums by name)
//     and arrays (fanouts); a key a checkpoint lacks (written before its option existed) reads as
//     the option's default;
//   - the resume rule: a resumed run takes its run-scoped options from the checkpoint.
// Adding an option is one entry in src/train/train_options.cpp and one field here.
//
// Thread safety: pure functions over values; the table is immutable once built.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/enum_names.h"
#include "skiff/model/link_decoder.h"
#include "skiff/model/model.h"
#include "skiff/status.h"
#include "skiff/train/link_batches.h"

namespace skiff::train {

// Default evaluation fanout per layer: the full neighbourhood, capped at this many neighbours.
inline constexpr int kDefaultEvalFanoutCap = 100;

// Feature rows as stored, or scaled to sum 1 (applied by the caller that loads the data).
enum class FeatureNorm { kNone, kRow };
inline constexpr EnumName<FeatureNorm> kFeatureNormNames[] = {{FeatureNorm::kNone, "none"},
                                                              {FeatureNorm::kRow, "row"}};

// Where batches are sampled: by host threads, or by a model that samples on its device
// (Model::HoldGraph: the graph in device memory beside the features); kAuto (the default) takes the
// device when the model can and the graph fits, else the host -- on the CPU, always the host.
enum class SamplerPlace { kHost, kDevice, kAuto };
inline constexpr EnumName<SamplerPlace> kSamplerPlaceNames[] = {{SamplerPlace::kHost, "host"},
                                                                {SamplerPlace::kDevice, "device"},
                                                                {SamplerPlace::kAuto, "auto"}};

// What each rank of a data-parallel run holds: the whole dataset (replicated; whole batches
// round robin), or the rows of a range of its partitions, fetching the rest from their owners
// (partitions; each plan batch split among the ranks by who owns its seeds). docs/distributed.md.
enum class Ownership { kReplicated, kPartitions };
inline constexpr EnumName<Ownership> kOwnershipNames[] = {{Ownership::kReplicated, "replicated"},
                                                          {Ownership::kPartitions, "partitions"}};

// What a run learns: node classification (labels of the node splits) or link prediction (the
// dataset's edge split; train/link_trainer.h).
enum class Task { kNode, kLink };
inline constexpr EnumName<Task> kTaskNames[] = {{Task::kNode, "node"}, {Task::kLink, "link"}};

// Ranking against every candidate drawn (raw), or without the candidates that are edges of the
// graph or of a split (filtered, the knowledge-graph convention).
enum class Ranking { kRaw, kFiltered };
inline constexpr EnumName<Ranking> kRankingNames[] = {{Ranking::kRaw, "raw"},
                                                      {Ranking::kFiltered, "filtered"}};

// Which candidates rank a held-out edge: the dataset's own (an OGB split's target_node_neg,
// LinkSplitInfo::candidates), when it has them, or --eval-negatives drawn uniformly.
enum class EvalCandidates { kDataset, kDrawn };
inline constexpr EnumName<EvalCandidates> kEvalCandidatesNames[] = {
    {EvalCandidates::kDataset, "dataset"}, {EvalCandidates::kDrawn, "drawn"}};

// Link prediction's settings (Task::kLink); the encoder is TrainOptions::model, whose last layer
// is out_dim wide.
struct LinkOptions {
  int64_t out_dim = 64;  // the encoder's output width: the node representation decoders score
  model::DecoderKind decoder = model::DecoderKind::kDot;
  model::LinkLoss loss = model::LinkLoss::kBce;
  int negatives = 64;  // shared negatives per training batch
  NegativeSampler negative_sampler = NegativeSampler::kUniform;
  int eval_negatives = 1000;  // ranking candidates per held-out edge (0: no ranking metrics)
  Ranking ranking = Ranking::kRaw;
  EvalCandidates eval_candidates = EvalCandidates::kDataset;
  int64_t eval_edges = 0;  // held-out edges ranked per split (0: all)
};

struct TrainOptions {
  Task task = Task::kNode;
  LinkOptions link;
  model::ModelConfig model;  // in_dim / num_classes are filled from the data
  model::Optimizer::Config optimizer;
  std::vector<int> fanouts{15, 10};  // input layer first; size == model.num_layers
  std::vector<int> eval_fanouts;     // empty: kDefaultEvalFanoutCap per layer
  int64_t batch_size = 1024;
  int64_t eval_batch_size = 4096;
  // Batches whose gradients make one optimiser step (their sum, in batch order, times
  // 1/batches): docs/distributed.md. 1: a step per batch.
  int accumulate = 1;
  Ownership ownership = Ownership::kReplicated;
  // Parts each training batch's forward and backward run in, one after another, summing their
  // gradients (Model::ComputeGradientsInParts): fewer activations alive at once, for small memory
  // budgets. 0: as the memory plan chooses (MemoryPlan::micro_batches; 1 without --memory).
  int micro_batches = 0;
  int epochs = 10;
  // Each epoch trains on this fraction of the training nodes, a fresh subset each epoch
  // (EpochSubset in train/batch_plan.h: repeated random subsets without replacement); 1: all.
  float epoch_fraction = 1.0f;
  FeatureNorm feature_norm = FeatureNorm::kNone;
  uint64_t seed = 0;
  std::string checkpoint_path;  // best model by validation accuracy ("" = none)
  std::string metrics_path;     // JSON lines, one per epoch ("" = none)
  // Device memory the model may use for the features (Model::HoldFeatures; 0: what the device has
  // free less a margin).
  uint64_t device_memory_bytes = 0;
  SamplerPlace sampler = SamplerPlace::kAuto;

  // Set by the program, not by users (no table entry).
  // The ranks of a data-parallel run (dist::Communicator::size()); saved in checkpoints under
  // "world_size" (absent: 1), since --resume needs the same number.
  int world_size = 1;
  int sampler_threads = 2;
  size_t prefetch_batches = 4;
  bool show_progress = true;

  // The largest fanout any pass asks for: the training fanouts' and the evaluation ones'
  // (kDefaultEvalFanoutCap per layer when none are given); -1 (whole rows) counts as the smallest.
  int LargestFanout() const;

  // The run-scoped options, with the data-derived model.in_dim and model.num_classes, as a JSON
  // object (the checkpoint's configuration).
  std::string ToJson() const;
  // Corruption naming the key for text that is not such an object, or a value of the wrong type
  // or out of range; model.seed is set from seed.
  static Result<TrainOptions> FromJson(const std::string& text);
};

enum class OptionScope {
  kRun,         // defines the run: saved in checkpoints, and a resumed run keeps the saved value
  kExtendable,  // saved, and a resumed run may change it (epochs: a run may be extended)
  kSession,     // how this process runs (outputs, device settings): not saved
};

struct TrainOption {
  std::string name;  // the long option and TOML key: "batch-size"
  std::string help;  // for --help; an enum's lists its names
  OptionScope scope = OptionScope::kRun;
  // The value in `o` as text, as `parse` reads it ("" for an unset path or automatic size).
  std::function<std::string(const TrainOptions& o)> text;
  std::string type;  // what the value is, for --help: INT, NUMBER, NAME, LIST, SIZE or PATH
  // Sets the value from `text`; InvalidArgument saying what was expected (without the name).
  std::function<Status(std::string_view text, TrainOptions* o)> parse_value;
  // Checkpoints (run and extendable scopes): the value as JSON, and back (throws
  // nlohmann::json::exception or std::invalid_argument on a value of the wrong type or range).
  std::function<nlohmann::json(const TrainOptions& o)> to_json;
  std::function<void(const nlohmann::json& value, TrainOptions* o)> from_json;

  // parse_value, with errors "--NAME: ...".
  Status Parse(std::string_view text, TrainOptions* o) const {
    return parse_value(text, o).WithContext("--" + name);
  }
  bool saved() const { return scope != OptionScope::kSession; }
  // The JSON key of a saved option: name with '-' spelt '_'.
  std::string json_key() const;
};

// Every option, in --help order.
const std::vector<TrainOption>& TrainOptionTable();
// The entry named `name` ("batch-size", without dashes), or nullptr.
const TrainOption* FindTrainOption(std::string_view name);

}  // namespace skiff::train
