// Training checkpoints: everything needed to continue a run exactly.
//
// File layout (little-endian):
//   "SKIFFCKP" (8 bytes) | uint32 version (= 2) | uint32 0 | uint64 payload_bytes |
//   uint64 xxh64(payload) | payload
// The payload holds the run configuration (JSON text), the completed epoch, the run seed (every
// random stream -- batch order, sampling, dropout -- is derived from (seed, epoch, batch), so the
// seed and the next epoch are the whole RNG state), the best validation result so far, every
// parameter (name, shape, values), and the optimiser's step count and state vectors.
// Written atomically (temp + fsync + rename).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::train {

inline constexpr uint32_t kCheckpointVersion = 2;  // 2: best_valid_loss

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
};

Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
// Where a run that keeps its best model at `best_path` keeps the state after its last finished
// epoch (what --resume continues from): `best_path` + ".last".
std::string LastCheckpointPath(const std::string& best_path);
// NotFound when missing; Corruption (naming the file and what is wrong: magic, version, size,
// checksum, truncated field) when the file is not an intact checkpoint.
Result<Checkpoint> ReadCheckpoint(const std::string& path);

}  // namespace skiff::train
