// CUDA optimiser steps: the GPU mirror of kernels/cpu/optimizer.h (same names, argument order
// and semantics; device pointers for the arrays, plus a trailing stream). Adam's bias corrections
// (1 - beta^t) are computed once on the host in double and passed to the kernel.
//
// Errors: InvalidArgument for n < 0 or step < 1; Internal from the runtime.
// Thread safety: stateless; calls on different streams are independent.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/optimizer.h"
#include "skiff/status.h"

namespace skiff::cuda {

using skiff::cpu::AdamConfig;

Status AdamStep(int64_t n, const AdamConfig& cfg, int64_t step, const float* grad, float* param,
                float* m, float* v, cudaStream_t stream);
// momentum_buf may be null when momentum == 0.
Status SgdStep(int64_t n, float lr, float momentum, float weight_decay, const float* grad,
               float* param, float* momentum_buf, cudaStream_t stream);

}  // namespace skiff::cuda
