// How `skiff predict` and `skiff train --export` compute every node's prediction: layer by layer
// over the graph and features held in memory (train/layerwise_inference.h: each node's
// representation computed once per layer), or in batches of seeds through the run's pipeline, as
// evaluation does (within --memory, and on the GPU).
//
// Thread safety: plain functions, called from the command's thread.
#pragma once

#include <string>

#include "skiff/enum_names.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/trainer.h"
#include "tools/skiff/compute_device.h"

namespace skiff::cli {

enum class Inference { kAuto, kLayers, kBatches };
inline constexpr EnumName<Inference> kInferenceNames[] = {
    {Inference::kAuto, "auto"}, {Inference::kLayers, "layers"}, {Inference::kBatches, "batches"}};

// `asked`, with auto resolved: layers when nothing runs out of core (`memory_bytes` 0) and the
// model computes on the CPU (the CUDA model runs whole batches), batches otherwise.
// InvalidArgument, naming the option, when layers is asked for where it cannot run.
Result<Inference> ResolveInference(Inference asked, Device device, uint64_t memory_bytes);

// Writes the predictions and embeddings of every node (train::ExportPredictions) of the trainer's
// model into `out_dir`: with kBatches by Trainer::Predict; with kLayers from the dataset's graph
// and features in memory -- `loaded` when given (train::LoadInMemory of `dataset`), else loaded
// here -- their rows normalised in place first when the run's options say so (--feature-norm row).
Status ExportWith(Inference inference, const format::Dataset& dataset, train::Trainer& trainer,
                  const std::string& out_dir, train::InMemoryData* loaded = nullptr);

}  // namespace skiff::cli
