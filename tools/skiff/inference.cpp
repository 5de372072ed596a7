#include "tools/skiff/inference.h"

#include <cstring>

#include "skiff/log.h"
#include "skiff/train/export.h"
#include "skiff/train/layerwise_inference.h"

namespace skiff::cli {

Result<Inference> ResolveInference(Inference asked, Device device, uint64_t memory_bytes) {
  const bool layers_run = device == Device::kCpu && memory_bytes == 0;
  if (asked == Inference::kAuto) return layers_run ? Inference::kLayers : Inference::kBatches;
  if (asked == Inference::kLayers && !layers_run) {
    return Status::InvalidArgument(
        std::string("--inference layers holds the graph, the features and two nodes x hidden "
                    "matrices in memory on the CPU: it cannot run ") +
        (memory_bytes > 0 ? "within --memory" : "with --device cuda") +
        "; use --inference batches (or auto)");
  }
  return asked;
}

Status ExportByLayer(const format::Dataset& dataset, const train::Checkpoint& checkpoint,
                     const std::string& checkpoint_name, const train::TrainOptions& options,
                     const std::string& out_dir, dist::Communicator* comm) {
  const bool lead = comm == nullptr || comm->rank() == 0;
  if (lead) {
    LogInfo("predicting layer by layer, the graph and features in memory" +
            (comm != nullptr && comm->size() > 1
                 ? " on each of " + std::to_string(comm->size()) + " ranks, which share each layer"
                 : std::string()));
  }
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<train::InMemoryData> data, train::LoadInMemory(dataset));
  if (options.feature_norm == train::FeatureNorm::kRow) data->features->NormalizeRows();
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer,
                         train::Trainer::Create(data->data, options));
  SKIFF_RETURN_IF_ERROR(trainer->Restore(checkpoint).WithContext(checkpoint_name));
  const train::TrainOptions& t = trainer->options();
  std::unique_ptr<dist::Communicator> alone;
  if (comm == nullptr) {
    alone = dist::CreateLocalCommunicator();
    comm = alone.get();
  }
  const train::LayerwiseOptions layerwise{.fanouts = t.eval_fanouts,
                                          .chunk_nodes = t.eval_batch_size,
                                          .seed = t.seed,
                                          .show_progress = t.show_progress && lead,
                                          .comm = comm};
  // Every rank computes its turns of each layer; only rank 0 asks for the rows, which it writes.
  auto predict = [&](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                     std::vector<float>* embeddings) {
    return train::PredictByLayer(
        trainer->model(), *data->graph, *data->features, layerwise,
        lead ? std::span<const int64_t>(nodes) : std::span<const int64_t>(), classes, embeddings);
  };
  return ExportOnRanks(dataset, *comm, predict, out_dir);
}

Status ExportOnRanks(const format::Dataset& dataset, dist::Communicator& comm,
                     const train::Predictor& predict, const std::string& out_dir) {
  auto shared = [&](std::vector<int64_t> nodes, std::vector<int32_t>* classes,
                    std::vector<float>* embeddings) -> Status {
    std::string order(reinterpret_cast<const char*>(nodes.data()), nodes.size() * sizeof(int64_t));
    SKIFF_RETURN_IF_ERROR(comm.Broadcast(&order, 0, "the export's node order"));
    nodes.resize(order.size() / sizeof(int64_t));
    std::memcpy(nodes.data(), order.data(), nodes.size() * sizeof(int64_t));
    return predict(nodes, classes, embeddings);
  };
  if (comm.rank() != 0) {
    std::vector<int32_t> classes;
    std::vector<float> embeddings;
    return shared({}, &classes, &embeddings);
  }
  return train::ExportPredictions(
      dataset,
      [&](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
          std::vector<float>* embeddings) { return shared(nodes, classes, embeddings); },
      out_dir);
}

}  // namespace skiff::cli
