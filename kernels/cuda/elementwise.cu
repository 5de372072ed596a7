#include "kernels/cuda/elementwise.cuh"

#include <string>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// Memory-bound element-wise kernels: 256 threads per block, one element per thread per
// iteration, grid capped (GridFor) and grid-stride beyond, so any n works with one launch.
constexpr int kThreads = 256;

__global__ void BiasAddKernel(int64_t rows, int64_t cols, const float* __restrict__ bias,
                              float* __restrict__ y) {
  SKIFF_GRID_STRIDE(i, rows * cols) { y[i] += bias[i % cols]; }
}

// grad_bias[c] += sum_r grad_y[r,c]: blockIdx.x tiles columns (coalesced row reads), blockIdx.y
// takes chunks of rows; one atomicAdd per thread at the end.
constexpr int64_t kRowsPerChunk = 256;
__global__ void BiasGradKernel(int64_t rows, int64_t cols, const float* __restrict__ grad_y,
                               float* __restrict__ grad_bias) {
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= cols) return;
  float sum = 0.0f;
  for (int64_t chunk = blockIdx.y; chunk * kRowsPerChunk < rows; chunk += gridDim.y) {
    const int64_t end = min(rows, (chunk + 1) * kRowsPerChunk);
    for (int64_t r = chunk * kRowsPerChunk; r < end; ++r) sum += grad_y[r * cols + col];
  }
  atomicAdd(&grad_bias[col], sum);
}

__global__ void ReluForwardKernel(int64_t n, const float* x, float* y) {
  SKIFF_GRID_STRIDE(i, n) { y[i] = fmaxf(x[i], 0.0f); }
}
__global__ void ReluBackwardKernel(int64_t n, const float* __restrict__ y,
                                   const float* __restrict__ grad_y, float* __restrict__ grad_x) {
  SKIFF_GRID_STRIDE(i, n) { grad_x[i] = y[i] > 0.0f ? grad_y[i] : 0.0f; }
}
__global__ void EluForwardKernel(int64_t n, float alpha, const float* x, float* y) {
  SKIFF_GRID_STRIDE(i, n) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : alpha * expm1f(v);
  }
}
__global__ void EluBackwardKernel(int64_t n, float alpha, const float* __restrict__ x,
                                  const float* __restrict__ grad_y, float* __restrict__ grad_x) {
  SKIFF_GRID_STRIDE(i, n) {
    const float v = x[i];
    grad_x[i] = v > 0.0f ? grad_y[i] : grad_y[i] * alpha * expf(v);
  }
}
// Forward and backward are the same masked scaling (x -> y, or grad_y -> grad_x).
__global__ void DropoutKernel(int64_t n, float p, float scale, uint64_t seed, const float* in,
                              float* out) {
  SKIFF_GRID_STRIDE(i, n) {
    out[i] = skiff::cpu::DropoutKeep(seed, static_cast<uint64_t>(i), p) ? in[i] * scale : 0.0f;
  }
}

Status CheckCount(const char* op, int64_t n) {
  if (n < 0)
    return Status::InvalidArgument(std::string(op) + ": negative size " + std::to_string(n));
  return Status::Ok();
}

Status LaunchDropout(const char* op, int64_t n, float p, uint64_t seed, const float* in, float* out,
                     cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount(op, n));
  if (!(p >= 0.0f && p < 1.0f)) {
    return Status::InvalidArgument(std::string(op) + ": p=" + std::to_string(p) +
                                   " outside [0, 1)");
  }
  if (n == 0) return Status::Ok();
  DropoutKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(n, p, 1.0f / (1.0f - p), seed, in,
                                                               out);
  return CheckLaunch(op);
}

}  // namespace

Status BiasAdd(int64_t rows, int64_t cols, const float* bias, float* y, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount("BiasAdd", rows));
  SKIFF_RETURN_IF_ERROR(CheckCount("BiasAdd", cols));
  if (rows * cols == 0) return Status::Ok();
  BiasAddKernel<<<GridFor(rows * cols, kThreads), kThreads, 0, stream>>>(rows, cols, bias, y);
  return CheckLaunch("BiasAddKernel");
}

Status BiasGrad(int64_t rows, int64_t cols, const float* grad_y, float* grad_bias,
                cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount("BiasGrad", rows));
  SKIFF_RETURN_IF_ERROR(CheckCount("BiasGrad", cols));
  if (rows * cols == 0) return Status::Ok();
  // y: enough row chunks to fill the GPU, capped at 1024 to bound the atomics per column.
  const dim3 grid(static_cast<unsigned>(CeilDiv(cols, kThreads)),
                  static_cast<unsigned>(std::min<int64_t>(CeilDiv(rows, kRowsPerChunk), 1024)));
  BiasGradKernel<<<grid, kThreads, 0, stream>>>(rows, cols, grad_y, grad_bias);
  return CheckLaunch("BiasGradKernel");
}

Status ReluForward(int64_t n, const float* x, float* y, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount("ReluForward", n));
  if (n == 0) return Status::Ok();
  ReluForwardKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(n, x, y);
  return CheckLaunch("ReluForwardKernel");
}

Status ReluBackward(int64_t n, const float* y, const float* grad_y, float* grad_x,
                    cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount("ReluBackward", n));
  if (n == 0) return Status::Ok();
  ReluBackwardKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(n, y, grad_y, grad_x);
  return CheckLaunch("ReluBackwardKernel");
}

Status EluForward(int64_t n, float alpha, const float* x, float* y, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount("EluForward", n));
  if (n == 0) return Status::Ok();
  EluForwardKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(n, alpha, x, y);
  return CheckLaunch("EluForwardKernel");
}

Status EluBackward(int64_t n, float alpha, const float* x, const float* grad_y, float* grad_x,
                   cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckCount("EluBackward", n));
  if (n == 0) return Status::Ok();
  EluBackwardKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(n, alpha, x, grad_y, grad_x);
  return CheckLaunch("EluBackwardKernel");
}

Status DropoutForward(int64_t n, float p, uint64_t seed, const float* x, float* y,
                      cudaStream_t stream) {
  return LaunchDropout("DropoutForward", n, p, seed, x, y, stream);
}

Status DropoutBackward(int64_t n, float p, uint64_t seed, const float* grad_y, float* grad_x,
                       cudaStream_t stream) {
  return LaunchDropout("DropoutBackward", n, p, seed, grad_y, grad_x, stream);
}

}  // namespace skiff::cuda
