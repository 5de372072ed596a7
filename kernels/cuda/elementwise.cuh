// CUDA element-wise ops (bias, ReLU, ELU, dropout): the GPU mirror of kernels/cpu/elementwise.h
// (same names, argument order and semantics; device pointers, plus a trailing stream).
// Dropout masks come from skiff::cpu::DropoutKeep, evaluated on the device, so the GPU drops
// exactly the elements the CPU drops for the same seed.
//
// Errors: InvalidArgument for negative sizes or p outside [0, 1); Internal from the CUDA runtime.
// Thread safety: stateless; calls on different streams are independent.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda {

Status BiasAdd(int64_t rows, int64_t cols, const float* bias, float* y, cudaStream_t stream);
Status BiasGrad(int64_t rows, int64_t cols, const float* grad_y, float* grad_bias,
                cudaStream_t stream);
Status ReluForward(int64_t n, const float* x, float* y, cudaStream_t stream);
Status ReluBackward(int64_t n, const float* y, const float* grad_y, float* grad_x,
                    cudaStream_t stream);
Status EluForward(int64_t n, float alpha, const float* x, float* y, cudaStream_t stream);
Status EluBackward(int64_t n, float alpha, const float* x, const float* grad_y, float* grad_x,
                   cudaStream_t stream);
Status DropoutForward(int64_t n, float p, uint64_t seed, const float* x, float* y,
                      cudaStream_t stream);
Status DropoutBackward(int64_t n, float p, uint64_t seed, const float* grad_y, float* grad_x,
                       cudaStream_t stream);

}  // namespace skiff::cuda
