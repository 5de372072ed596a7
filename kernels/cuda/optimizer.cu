#include "kernels/cuda/optimizer.cuh"

#include <cmath>
#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// Element-wise and memory-bound: 256 threads, grid capped and grid-stride (common.cuh).
constexpr int kThreads = 256;

__global__ void AdamKernel(int64_t n, float lr, float beta1, float beta2, float eps, float wd,
                           float bias1, float bias2, const float* __restrict__ grad,
                           float* __restrict__ param, float* __restrict__ m,
                           float* __restrict__ v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = grad[i] + wd * param[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] -= lr * (mi / bias1) / (sqrtf(vi / bias2) + eps);
  }
}

__global__ void SgdKernel(int64_t n, float lr, float momentum, float wd,
                          const float* __restrict__ grad, float* __restrict__ param,
                          float* __restrict__ buf) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = grad[i] + wd * param[i];
    if (buf != nullptr) {
      g = momentum * buf[i] + g;
      buf[i] = g;
    }
    param[i] -= lr * g;
  }
}

}  // namespace

Status AdamStep(int64_t n, const AdamConfig& cfg, int64_t step, const float* grad, float* param,
                float* m, float* v, cudaStream_t stream) {
  if (n < 0 || step < 1) {
    return Status::InvalidArgument("AdamStep: n=" + std::to_string(n) +
                                   ", step=" + std::to_string(step) + " (need n >= 0, step >= 1)");
  }
  if (n == 0) return Status::Ok();
  const auto bias1 = static_cast<float>(1.0 - std::pow(static_cast<double>(cfg.beta1), step));
  const auto bias2 = static_cast<float>(1.0 - std::pow(static_cast<double>(cfg.beta2), step));
  AdamKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(
      n, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, bias1, bias2, grad, param, m, v);
  return CheckLaunch("AdamKernel");
}

Status SgdStep(int64_t n, float lr, float momentum, float weight_decay, const float* grad,
               float* param, float* momentum_buf, cudaStream_t stream) {
  if (n < 0) return Status::InvalidArgument("SgdStep: negative n " + std::to_string(n));
  if (momentum != 0.0f && momentum_buf == nullptr) {
    return Status::InvalidArgument("SgdStep: momentum " + std::to_string(momentum) +
                                   " needs momentum_buf");
  }
  if (n == 0) return Status::Ok();
  SgdKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(
      n, lr, momentum, weight_decay, grad, param, momentum != 0.0f ? momentum_buf : nullptr);
  return CheckLaunch("SgdKernel");
}

}  // namespace skiff::cuda
