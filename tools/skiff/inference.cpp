#include "tools/skiff/inference.h"

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

Status ExportWith(Inference inference, const format::Dataset& dataset, train::Trainer& trainer,
                  const std::string& out_dir, train::InMemoryData* loaded) {
  SKIFF_CHECK(inference != Inference::kAuto);
  if (inference == Inference::kBatches) {
    return train::ExportPredictions(dataset, trainer, out_dir);
  }
  LogInfo("predicting layer by layer, the graph and features in memory");
  std::unique_ptr<train::InMemoryData> own;
  if (loaded == nullptr) {
    SKIFF_ASSIGN_OR_RETURN(own, train::LoadInMemory(dataset));
  }
  train::InMemoryData* const data = loaded != nullptr ? loaded : own.get();
  const train::TrainOptions& t = trainer.options();
  if (t.feature_norm == train::FeatureNorm::kRow) data->features->NormalizeRows();
  const train::LayerwiseOptions options{.fanouts = t.eval_fanouts,
                                        .chunk_nodes = t.eval_batch_size,
                                        .seed = t.seed,
                                        .show_progress = t.show_progress};
  return train::ExportPredictions(
      dataset,
      [&](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
          std::vector<float>* embeddings) {
        return train::PredictByLayer(trainer.model(), *data->graph, *data->features, options, nodes,
                                     classes, embeddings);
      },
      out_dir);
}

}  // namespace skiff::cli
