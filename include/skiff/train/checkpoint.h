// Training checkpoints: everything needed to continue a run exactly.
//
// File layout (little-endian):
//   "SKIFFCKP" (8 bytes) | uint32 version (= 2) | uint32 0 | uint64 payload_bytes |
//   uint64 xxh64(payload) | payload
// The payload holds the run configuration (JSON text), the completed epoch, the run seed (every
// random stream -- batch order, sampling, dropout -- is derived from (seed, epoch, batch), so the
// seed and the next epoch are the whole RNG state), the best validation result so far, every
// parameter (name, shape, values), the optimiser's step count and state vectors, and (version 3)
// the best epoch's metrics as a JSON object where they are more than an accuracy (link
// prediction). Version 2 files are read (without the metrics). Written atomically (temp + fsync +
// rename).
//
// Parameters and optimiser state move between a model and a checkpoint with MatchParameters /
// CopyParameters and MatchState, which check before anything is overwritten.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::train {

// 2: best_valid_loss; 3: best_metrics_json.
inline constexpr uint32_t kCheckpointVersion = 3;
inline constexpr uint32_t kOldestCheckpointVersion = 2;

struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct Checkpoint {
  std::string config_json;  // TrainOptions as JSON
  int64_t epoch = -1;       // last completed epoch (0-based)
  uint64_t seed = 0;
  int64_t best_epoch = -1;
  double best_valid_acc = 0;
  double best_valid_loss = 0;  // validation loss at best_epoch (ties on accuracy go to lower loss)
  double best_test_acc = 0;
  std::vector<CheckpointTensor> parameters;
  int64_t optimizer_steps = 0;
  std::vector<std::vector<float>> optimizer_state;
  // The best epoch's evaluation as a JSON object, for tasks whose best result is more than an
  // accuracy (link prediction: LinkEvaluation); "" otherwise.
  std::string best_metrics_json;
};

Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
// Where a run that keeps its best model at `best_path` keeps the state after its last finished
// epoch (what --resume continues from): `best_path` + ".last".
std::string LastCheckpointPath(const std::string& best_path);
// A run's checkpoints after an epoch: the best model at `best_path` when the epoch `improved` (for
// predict and export), and always the state at LastCheckpointPath (for --resume, so that a resumed
// run never redoes an epoch that finished).
Status WriteEpochCheckpoints(const std::string& best_path, const Checkpoint& checkpoint,
                             bool improved);
// NotFound when missing; Corruption (naming the file and what is wrong: magic, version, size,
// checksum, truncated field) when the file is not an intact checkpoint.
Result<Checkpoint> ReadCheckpoint(const std::string& path);

// Appends `params` (name, shape, values) to checkpoint->parameters.
void AppendParameters(const std::vector<model::Parameter>& params, Checkpoint* checkpoint);
// OK when `saved` holds `params`' names and shapes in order; InvalidArgument naming the first
// mismatch (or the counts) otherwise.
Status MatchParameters(const std::vector<model::Parameter>& params,
                       std::span<const CheckpointTensor> saved);
// Copies `saved` into `params` (MatchParameters must have accepted them).
void CopyParameters(std::span<const CheckpointTensor> saved,
                    const std::vector<model::Parameter>& params);
// OK when `saved` has the vectors of `state` with their sizes; InvalidArgument otherwise.
Status MatchState(const std::vector<std::vector<float>>& state,
                  std::span<const std::vector<float>> saved);

}  // namespace skiff::train
