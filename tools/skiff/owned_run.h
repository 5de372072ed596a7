// An owned-partition rank as `skiff train` and `skiff predict` open it (docs/distributed.md, "Owned
// partitions"): its range of the dataset's partitions (train::LoadOwned; within --memory behind its
// buffer pool, pipeline::DiskOwnedRows) and a CPU trainer that splits every plan batch by owner.
// And the prediction such ranks share: every rank predicts the nodes it owns and rank 0 writes the
// export.
//
// Thread safety: plain functions, called from the command's thread; every one is a collective of
// `comm` (every rank calls it).
#pragma once

#include <memory>
#include <string>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/pipeline/disk_owned_rows.h"
#include "skiff/status.h"
#include "skiff/train/owned_data.h"
#include "skiff/train/trainer.h"

namespace skiff::cli {

struct OwnedRank {
  std::unique_ptr<train::OwnedData> data;
  std::unique_ptr<train::Trainer> trainer;
  pipeline::DiskOwnedRows* disk = nullptr;  // within --memory (null in memory, or an empty range)
};

// Loads this rank's range of `dataset` (a whole dataset or this rank's shard; rows normalised
// when `t` says --feature-norm row; within `memory_bytes` when > 0) and creates its trainer, given
// `comm` and the ownership; within --memory every rank cuts its evaluation batches at the smallest
// limit of the ranks' budgets (rank 0 logs it when below --eval-batch-size). The dataset and
// `comm` must outlive the result.
Result<OwnedRank> OpenOwnedRank(const format::Dataset* dataset, const train::TrainOptions& t,
                                uint64_t memory_bytes, dist::Communicator& comm);

// Every node's prediction with `rank.trainer`'s model as it is, written by rank 0 into `out_dir`
// (ExportOnRanks): each rank predicts the nodes it owns, `by_layer` layer by layer
// (train::PredictByLayerOwned: its range in memory), else in the one-process plan's batches of the
// export's order (Trainer::Predict; within --memory when the rank was opened so).
Status PredictOwnedRanks(const format::Dataset& dataset, OwnedRank& rank, bool by_layer,
                         const std::string& out_dir, dist::Communicator& comm);

}  // namespace skiff::cli
