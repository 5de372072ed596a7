// What `skiff train --distributed` adds to a training run (docs/distributed.md): the checks every
// rank makes before the first step, so that a job whose ranks disagree never trains.
//
// Thread safety: plain functions, called from the command's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/train_options.h"
#include "tools/skiff/compute_device.h"

namespace skiff::cli {

// InvalidArgument, naming the option, for what a step over several batches (`ranks` > 1, or
// --accumulate > 1), several GPUs (`gpus`, --gpus) or an owned-partition run does not do yet:
// --device cuda with owned partitions; --gpus without --device cuda,
// or with ranks, owned partitions or --task link; --task link with owned partitions.
Status CheckStepOptions(const train::TrainOptions& t, int ranks, Device device,
                        const std::vector<int>& gpus);

// Logs, on rank 0, every rank's peak RSS so far ("peak RSS per rank: rank 0 ..., rank 1 ..."),
// with the budget each was given when `memory_bytes` > 0 (each rank's promise is its own peak
// <= budget + the fixed overhead). A collective: every rank calls it. Nothing for one process.
Status LogRankPeaks(dist::Communicator& comm, uint64_t memory_bytes);

// This rank's rank among the ranks on its machine (those whose host name is its), from every
// rank's host name: a collective, every rank calls it.
Result<int> LocalRank(dist::Communicator& comm);

// InvalidArgument when --resume's checkpoint was written by a job of another size, naming both.
Status CheckResumeWorldSize(int saved_world_size, int ranks, const std::string& checkpoint);

// Rank `rank`'s shard in a directory written by `skiff shard`: "<dir>/rank-<rank>".
std::string RankShardDir(const std::string& dir, int rank);
// The dataset rank `rank` opens for the path it was given: `dir` itself when it holds a dataset
// (manifest.json), else RankShardDir(dir, rank). InvalidArgument naming the rank when `dir` holds
// another rank's shards but not this one's; Dataset::Open's errors otherwise.
Result<std::unique_ptr<format::Dataset>> OpenRankDataset(const std::string& dir, int rank);
// A shard opened by rank `rank` of `ranks`: InvalidArgument unless it is that rank's shard of a job
// of that size, saying which one it is and where the rank's own is. OK for a whole dataset.
Status CheckRankShard(const format::Dataset& dataset, int rank, int ranks);

// Every rank's dataset fingerprint (its manifest's checksum; a shard's, the whole dataset's) and
// run options (those a checkpoint
// saves), gathered on every rank; InvalidArgument naming the first field that differs from rank
// 0's and the ranks that differ, on every rank alike. A failed collective's Status otherwise.
Status CheckSameRun(dist::Communicator& comm, const format::Dataset& dataset,
                    const train::TrainOptions& t);

}  // namespace skiff::cli
