// How `skiff predict` and `skiff train --export` compute every node's prediction: layer by layer
// over the graph and features held in memory (train/layerwise_inference.h: each node's
// representation computed once per layer), or in batches of seeds through the run's pipeline, as
// evaluation does (within --memory, and on the GPU: train::ExportPredictions with the Trainer).
//
// Thread safety: plain functions, called from the command's thread.
#pragma once

#include <string>

#include "skiff/dist/communicator.h"
#include "skiff/enum_names.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/export.h"
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

// Layer by layer from a checkpoint: loads the dataset's graph and features (train::LoadInMemory;
// rows normalised in place when `options` say --feature-norm row), restores `checkpoint` (errors
// name `checkpoint_name`) into a CPU model built with `options`, and writes every node's
// prediction and embedding into `out_dir` (train::ExportPredictions). What `skiff predict` runs,
// and `skiff train --export` once the run's partitions are freed, so that the run's copy of the
// dataset and this one are never held at once.
//
// With `comm` of several ranks (each holding the same dataset and checkpoint), a collective: the
// ranks share every layer's work (train::LayerwiseOptions::comm) and rank 0 alone writes `out_dir`;
// the others compute and write nothing.
Status ExportByLayer(const format::Dataset& dataset, const train::Checkpoint& checkpoint,
                     const std::string& checkpoint_name, const train::TrainOptions& options,
                     const std::string& out_dir, dist::Communicator* comm = nullptr);

// An export computed by the ranks of `comm` alike: every rank calls it, and predicts the export's
// nodes with `predict` -- rank 0 passes their order (train/export.h) and sends it to the others --
// and rank 0 writes `out_dir` with the outputs it gets (the others' are not used).
Status ExportOnRanks(const format::Dataset& dataset, dist::Communicator& comm,
                     const train::Predictor& predict, const std::string& out_dir);

}  // namespace skiff::cli
