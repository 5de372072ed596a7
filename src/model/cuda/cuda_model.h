// The CUDA model: skiff::model::Model on kernels/cuda, the GPU mirror of src/model/cpu_model.cpp
// (same layers, parameter names, shapes, initialisation, dropout masks; see model/model.h).
// Reached through Model::CreateCuda (src/model/cuda_model.cpp), which builds the CPU model first.
//
// Design: the master parameters and their gradients stay in HOST memory -- they are the CPU
// model's tensors, so Parameters() returns host pointers and the optimiser, checkpoints and
// ZeroGrad work unchanged. Forward uploads every parameter (the optimiser may have changed them)
// and the batch (block CSRs, input features) to device buffers, runs the layers with cuBLAS and
// the kernels of kernels/cuda, and copies the logits (and embeddings) back. Backward computes the
// gradients on the device and adds them into the host gradients. docs/cuda.md ("GPU compute
// stage") lists the transfer costs this design pays per batch.
//
// Thread safety: one thread at a time (like every Model).
#pragma once

#include <memory>

#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::cuda {

// Wraps `host_model` (a CPU model of the same config: its parameters become the master copy).
// Unavailable/Internal when the device, a stream or cuBLAS cannot be initialised.
Result<std::unique_ptr<model::Model>> CreateCudaModel(std::unique_ptr<model::Model> host_model);

}  // namespace skiff::cuda
