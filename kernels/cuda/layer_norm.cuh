// CUDA layer normalisation: the GPU mirror of kernels/cpu/layer_norm.h (same names, argument
// order and semantics; device pointers, plus a trailing stream). Row statistics are accumulated in
// fp32 per lane and combined with shuffles (the CPU uses double; the tests' tolerance covers it).
//
// Errors: InvalidArgument for rows < 0 or cols < 1; Internal from the CUDA runtime.
// Thread safety: stateless; calls on different streams are independent.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda {

Status LayerNormForward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                        const float* beta, float eps, float* y, float* mean, float* rstd,
                        cudaStream_t stream);
// grad_x may alias grad_y; grad_gamma and grad_beta accumulate.
Status LayerNormBackward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                         const float* mean, const float* rstd, const float* grad_y, float* grad_x,
                         float* grad_gamma, float* grad_beta, cudaStream_t stream);

}  // namespace skiff::cuda
