// Batch planning: the first stage of an epoch. Splits a node set into mini-batches of seeds,
// shuffled by a generator seeded with (seed, epoch) so every epoch has its own order and a resumed
// run replays the same order. Every node appears in exactly one batch.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace skiff::train {

// Stream IDs keep the random streams of training, evaluation and dropout apart (the Trainer's; a
// loader that draws the Trainer's batches uses the same).
inline constexpr uint64_t kTrainStream = 1, kDropoutStream = 2, kValidStream = 3, kTestStream = 4,
                          kPredictStream = 5;
// The random stream of the epochs' training subsets (EpochSubset; 6-8 are taken).
inline constexpr uint64_t kEpochSubsetStream = 9;

// Repeated random subsets without replacement (RS2; Okanovic et al. 2023): the training nodes of
// `epoch` when each epoch trains on `fraction` (in (0, 1]) of `nodes`. Epochs come in cycles of
// m = EpochsPerSubsetCycle(fraction) (at most |nodes|): a cycle shuffles `nodes` once (seeded by
// (seed, cycle)) and its epochs take the m consecutive slices [i |nodes| / m, (i + 1) |nodes| / m)
// of that order, so a cycle trains on every node exactly once and no node twice (the fraction
// taken is 1 / m, the nearest such to `fraction`). fraction 1: `nodes` itself. The subset is in
// ascending order (PlanBatches shuffles it for the epoch).
std::vector<int64_t> EpochSubset(std::span<const int64_t> nodes, double fraction, uint64_t seed,
                                 uint64_t epoch);
// round(1 / fraction), at least 1: the epochs of one cycle of EpochSubset.
uint64_t EpochsPerSubsetCycle(double fraction);

// Batches of at most `batch_size` (> 0) nodes, the last one possibly smaller. With shuffle false
// the nodes keep their given order (evaluation and prediction).
std::vector<std::vector<int64_t>> PlanBatches(std::span<const int64_t> nodes, int64_t batch_size,
                                              bool shuffle, uint64_t seed, uint64_t epoch);

// The batches of a pass that rank `rank` of `ranks` takes in a data-parallel run: numbers rank,
// rank + ranks, rank + 2 ranks, ... of `batches` (the one-process plan), so that every batch --
// and every seed -- of the pass is taken by exactly one rank, and step s of a training pass is
// batches s * ranks .. s * ranks + ranks - 1, batch s * ranks + r on rank r. *numbers gets each
// taken batch's number in the pass (what its random streams are drawn from).
std::vector<std::vector<int64_t>> ShardBatches(std::vector<std::vector<int64_t>> batches, int rank,
                                               int ranks, std::vector<uint64_t>* numbers);

}  // namespace skiff::train
