#include "tools/skiff/owned_run.h"

#include <algorithm>
#include <span>
#include <vector>

#include "skiff/log.h"
#include "skiff/train/owned_layerwise.h"
#include "tools/skiff/compute_device.h"
#include "tools/skiff/inference.h"

namespace skiff::cli {
namespace {

// Within --memory, a rank's own rows live on disk behind its buffer pool (pipeline::DiskOwnedRows);
// an empty range has nothing to read.
train::OpenOwnedRows OwnedRowsWithin(const format::Dataset* ds, const train::TrainOptions& t,
                                     uint64_t memory_bytes, pipeline::DiskOwnedRows** disk) {
  return
      [=](const train::NodeRanges& ranges, int rank,
          const format::Dataset::NodeSplits& splits) -> Result<std::unique_ptr<train::OwnedRows>> {
        std::unique_ptr<train::OwnedRows> out;
        if (ranges.begin(rank) == ranges.end(rank)) {
          SKIFF_ASSIGN_OR_RETURN(
              out, train::InMemoryOwnedRows::Load(*ds, ranges.begin(rank), ranges.end(rank)));
          return out;
        }
        pipeline::DiskOwnedRowsOptions io;
        io.memory_bytes = memory_bytes;
        SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::DiskOwnedRows> rows,
                               pipeline::DiskOwnedRows::Open(ds, ranges, rank, splits, t, io));
        *disk = rows.get();
        out = std::move(rows);
        return out;
      };
}

// Within --memory, every owned rank cuts its evaluation batches at the smallest limit of the
// ranks' budgets (DiskOwnedRows::eval_batch_limit; `disk` null: an empty range, no limit), which
// rank 0 logs when it is below --eval-batch-size.
Status LimitOwnedEvalBatches(dist::Communicator& comm, const pipeline::DiskOwnedRows* disk,
                             train::Trainer& trainer) {
  std::vector<int64_t> limits(static_cast<size_t>(comm.size()), 0);
  limits[static_cast<size_t>(comm.rank())] = disk != nullptr ? disk->eval_batch_limit() : 0;
  SKIFF_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(limits), "evaluation batch limits"));
  int64_t agreed = 0;
  for (int64_t limit : limits) {
    if (limit > 0) agreed = agreed == 0 ? limit : std::min(agreed, limit);
  }
  trainer.SetEvalBatchLimit(agreed);
  const int64_t asked = trainer.options().eval_batch_size;
  if (comm.rank() == 0 && agreed > 0 && agreed < asked) {
    LogInfo("within --memory: evaluation batches of at most " + std::to_string(agreed) +
            " seeds (the most every rank's budget allows; --eval-batch-size " +
            std::to_string(asked) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<OwnedRank> OpenOwnedRank(const format::Dataset* dataset, const train::TrainOptions& t,
                                uint64_t memory_bytes, dist::Communicator& comm) {
  OwnedRank rank;
  SKIFF_ASSIGN_OR_RETURN(
      rank.data,
      train::LoadOwned(
          *dataset, &comm,
          memory_bytes > 0 ? OwnedRowsWithin(dataset, t, memory_bytes, &rank.disk) : nullptr));
  if (t.feature_norm == train::FeatureNorm::kRow) rank.data->own->NormalizeRows();
  SKIFF_ASSIGN_OR_RETURN(rank.trainer,
                         train::Trainer::Create(rank.data->data, t, ModelFactoryFor(Device::kCpu)));
  SKIFF_RETURN_IF_ERROR(rank.trainer->SetCommunicator(&comm));
  SKIFF_RETURN_IF_ERROR(rank.trainer->SetOwnership(
      rank.data->ranges.get(), &rank.data->graph->traffic(), &rank.data->features->traffic()));
  if (memory_bytes > 0) {
    SKIFF_RETURN_IF_ERROR(LimitOwnedEvalBatches(comm, rank.disk, *rank.trainer));
  }
  return rank;
}

Status PredictOwnedRanks(const format::Dataset& dataset, OwnedRank& rank, bool by_layer,
                         const std::string& out_dir, dist::Communicator& comm) {
  train::Trainer& trainer = *rank.trainer;
  const train::OwnedData& data = *rank.data;
  auto predict = [&](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                     std::vector<float>* embeddings) -> Status {
    if (!by_layer) return trainer.Predict(nodes, classes, embeddings);
    const train::OwnedLayerwiseSources sources{.graph = data.graph.get(),
                                               .features = data.features.get(),
                                               .ranges = data.ranges.get(),
                                               .comm = &comm};
    // The trainer's options: the evaluation fanouts resolved (the default: every neighbour,
    // capped).
    const train::TrainOptions& run = trainer.options();
    const train::LayerwiseOptions layerwise{.fanouts = run.eval_fanouts,
                                            .chunk_nodes = run.eval_batch_size,
                                            .seed = run.seed,
                                            .show_progress = run.show_progress};
    return train::PredictByLayerOwned(trainer.model(), sources, layerwise, nodes, classes,
                                      embeddings);
  };
  return ExportOnRanks(dataset, comm, predict, out_dir);
}

}  // namespace skiff::cli
