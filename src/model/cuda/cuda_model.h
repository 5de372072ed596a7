// The CUDA model: skiff::model::Model on kernels/cuda, the GPU mirror of src/model/cpu_model.cpp
// (same layers, parameter names, shapes, initialisation, dropout masks; see model/model.h).
// Reached through Model::CreateCuda (src/model/cuda_model.cpp), which builds the CPU model first
// and loads this code from libskiff_cuda.so (plugin.cpp).
//
// Design: training is device-resident. Parameters, gradients and the optimiser's moments live in
// device memory; TrainStep uploads only the batch (BatchStaging: block CSRs, labels, and the input
// rows -- only their IDs when the model holds the features, HoldFeatures, and only the rows its
// device row cache misses when they do not fit), and runs forward,
// softmax cross-entropy, backward and the optimiser update on one stream without waiting for
// the device; the loss statistics accumulate on the device until TakeLossTotals. The host copies
// (the CPU model's tensors, which Parameters() returns) are brought up to date only when asked
// for -- checkpoints, exports, tests -- and are taken back to the device before the next use, so
// any caller that changes them (Restore, a host optimiser) is seen. docs/cuda.md, "GPU compute
// stage", has the per-batch costs.
//
// Thread safety: one thread at a time (like every Model).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::cuda {

// Wraps `host_model` (a CPU model of the same config: its parameters are the starting point and
// the host copy) on CUDA device `device` (an ordinal the machine has). Every call of the model
// makes its device current first, so one thread may drive models on several devices.
// Unavailable/Internal when the device, a stream or cuBLAS cannot be initialised.
Result<std::unique_ptr<model::Model>> CreateCudaModel(std::unique_ptr<model::Model> host_model,
                                                      int device = 0);

// Where a CUDA model keeps its step sum (Model::AccumulateGradients): `count` floats at `sum` on
// `device`, written on `stream` -- what a sum across replicas (replicas.h) all-reduces, on that
// stream. `cuda_model` must come from CreateCudaModel (checked).
struct StepSumView {
  int device = 0;
  cudaStream_t stream = nullptr;
  float* sum = nullptr;
  size_t count = 0;
};
StepSumView StepSumOf(model::Model& cuda_model);

// Model::CudaPlacementFor on the first device: the rules of HoldFeatures and HoldGraph, before any
// model exists. Internal from the CUDA runtime.
Result<model::Model::CudaPlacement> PlacementFor(uint64_t device_bytes, int64_t num_nodes,
                                                 int64_t feature_dim, int64_t num_edges,
                                                 int num_layers, int max_fanout);

}  // namespace skiff::cuda
