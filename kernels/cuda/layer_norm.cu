#include "kernels/cuda/layer_norm.cuh"

#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// One warp per row: two passes for mean and variance (the row is re-read from L1/L2, which is
// cheaper and more accurate than a one-pass sum of squares), then the normalised write.
__global__ void __launch_bounds__(kRowBlockThreads)
    LayerNormForwardKernel(int64_t rows, int64_t cols, const float* __restrict__ x,
                           const float* __restrict__ gamma, const float* __restrict__ beta,
                           float eps, float* __restrict__ y, float* __restrict__ mean,
                           float* __restrict__ rstd) {
  const int lane = Lane();
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int64_t r = GlobalWarp(); r < rows; r += WarpCount()) {
    const float* xr = x + r * cols;
    float sum = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarpSize) sum += xr[c];
    const float mu = WarpSum(sum) * inv_cols;
    float sq = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float centred = xr[c] - mu;
      sq += centred * centred;
    }
    const float rs = 1.0f / sqrtf(WarpSum(sq) * inv_cols + eps);
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    float* yr = y + r * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
  }
}

// grad_gamma[c] += sum_r grad_y[r,c] * xhat[r,c]; grad_beta[c] += sum_r grad_y[r,c]. One thread
// per column (coalesced row reads), blockIdx.y takes chunks of 256 rows, one atomicAdd each.
constexpr int64_t kRowsPerChunk = 256;
__global__ void LayerNormParamGradKernel(int64_t rows, int64_t cols, const float* __restrict__ x,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ rstd,
                                         const float* __restrict__ grad_y,
                                         float* __restrict__ grad_gamma,
                                         float* __restrict__ grad_beta) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  float acc_gamma = 0.0f, acc_beta = 0.0f;
  for (int64_t chunk = blockIdx.y; chunk * kRowsPerChunk < rows; chunk += gridDim.y) {
    const int64_t end = min(rows, (chunk + 1) * kRowsPerChunk);
    for (int64_t r = chunk * kRowsPerChunk; r < end; ++r) {
      const float g = grad_y[r * cols + c];
      acc_gamma += g * (x[r * cols + c] - mean[r]) * rstd[r];
      acc_beta += g;
    }
  }
  atomicAdd(&grad_gamma[c], acc_gamma);
  atomicAdd(&grad_beta[c], acc_beta);
}

// One warp per row: the two row means, then grad_x. Each lane reads and writes only its own
// columns, so grad_x may alias grad_y.
__global__ void __launch_bounds__(kRowBlockThreads)
    LayerNormGradXKernel(int64_t rows, int64_t cols, const float* __restrict__ x,
                         const float* __restrict__ gamma, const float* __restrict__ mean,
                         const float* __restrict__ rstd, const float* grad_y, float* grad_x) {
  const int lane = Lane();
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int64_t r = GlobalWarp(); r < rows; r += WarpCount()) {
    const float* xr = x + r * cols;
    const float* gr = grad_y + r * cols;
    const float mu = mean[r], rs = rstd[r];
    float sum_gy = 0.0f, sum_gy_xhat = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float gy = gr[c] * gamma[c];
      sum_gy += gy;
      sum_gy_xhat += gy * (xr[c] - mu) * rs;
    }
    const float mean_gy = WarpSum(sum_gy) * inv_cols;
    const float mean_gy_xhat = WarpSum(sum_gy_xhat) * inv_cols;
    float* gx = grad_x + r * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float xhat = (xr[c] - mu) * rs;
      gx[c] = rs * (gr[c] * gamma[c] - mean_gy - xhat * mean_gy_xhat);
    }
  }
}

constexpr int kThreads = 256;

Status CheckSizes(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 1) {
    return Status::InvalidArgument(std::string(op) + ": need rows >= 0 and cols >= 1 (rows=" +
                                   std::to_string(rows) + ", cols=" + std::to_string(cols) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status LayerNormForward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                        const float* beta, float eps, float* y, float* mean, float* rstd,
                        cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("LayerNormForward", rows, cols));
  if (rows == 0) return Status::Ok();
  // One warp per row, 8 rows per 256-thread block.
  LayerNormForwardKernel<<<GridFor(rows, kWarpsPerRowBlock), kRowBlockThreads, 0, stream>>>(
      rows, cols, x, gamma, beta, eps, y, mean, rstd);
  return CheckLaunch("LayerNormForwardKernel");
}

Status LayerNormBackward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                         const float* mean, const float* rstd, const float* grad_y, float* grad_x,
                         float* grad_gamma, float* grad_beta, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("LayerNormBackward", rows, cols));
  if (rows == 0) return Status::Ok();
  // Parameter gradients first: grad_x may overwrite grad_y (stream order guarantees it).
  const dim3 grid(static_cast<unsigned>(CeilDiv(cols, kThreads)),
                  static_cast<unsigned>(std::min<int64_t>(CeilDiv(rows, kRowsPerChunk), 1024)));
  LayerNormParamGradKernel<<<grid, kThreads, 0, stream>>>(rows, cols, x, mean, rstd, grad_y,
                                                          grad_gamma, grad_beta);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("LayerNormParamGradKernel"));
  LayerNormGradXKernel<<<GridFor(rows, kWarpsPerRowBlock), kRowBlockThreads, 0, stream>>>(
      rows, cols, x, gamma, mean, rstd, grad_y, grad_x);
  return CheckLaunch("LayerNormGradXKernel");
}

}  // namespace skiff::cuda
