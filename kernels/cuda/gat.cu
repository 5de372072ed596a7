#include "kernels/cuda/gat.cuh"

#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/spmm.cuh"

namespace skiff::cuda {
namespace {

using detail::SpmmArgs;
using detail::WeightKind;

Status CheckSizes(const char* op, int64_t rows, int64_t heads, int64_t dim) {
  if (rows < 0 || heads < 0 || dim < 0) {
    return Status::InvalidArgument(
        std::string(op) + ": negative size (rows=" + std::to_string(rows) +
        ", heads=" + std::to_string(heads) + ", dim=" + std::to_string(dim) + ")");
  }
  return Status::Ok();
}

__device__ __forceinline__ float LeakyRelu(float z, float slope) {
  return z > 0.0f ? z : z * slope;
}

// One warp per (node, head): a strided dot product of dim floats, reduced with shuffles.
__global__ void __launch_bounds__(kRowBlockThreads)
    AttentionDotKernel(int64_t n, int64_t heads, int64_t dim, const float* __restrict__ feat,
                       const float* __restrict__ attn, float* __restrict__ el) {
  const int lane = Lane();
  for (int64_t task = GlobalWarp(); task < n * heads; task += WarpCount()) {
    const int64_t h = task % heads;
    const float* f = feat + task * dim;
    const float* a = attn + h * dim;
    float sum = 0.0f;
    for (int64_t k = lane; k < dim; k += kWarpSize) sum += f[k] * a[k];
    sum = WarpSum(sum);
    if (lane == 0) el[task] = sum;
  }
}

// grad_feat[n,h,k] += grad_el[n,h] * attn[h,k]: one thread per element, grid-stride.
__global__ void AttentionDotGradFeatKernel(int64_t n, int64_t heads, int64_t dim,
                                           const float* __restrict__ attn,
                                           const float* __restrict__ grad_el,
                                           float* __restrict__ grad_feat) {
  const int64_t total = n * heads * dim;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t hk = i % (heads * dim);
    grad_feat[i] += grad_el[i / dim] * attn[hk];
  }
}

// grad_attn[h,k] += sum_n grad_el[n,h] * feat[n,h,k]: blockIdx.x tiles the heads*dim columns
// (one thread per column, so reads of a feat row are coalesced), blockIdx.y takes a chunk of
// kRowsPerChunk rows; each thread sums its chunk in registers, then one atomicAdd per thread.
constexpr int64_t kRowsPerChunk = 256;
__global__ void AttentionDotGradAttnKernel(int64_t n, int64_t heads, int64_t dim,
                                           const float* __restrict__ feat,
                                           const float* __restrict__ grad_el,
                                           float* __restrict__ grad_attn) {
  const int64_t cols = heads * dim;
  const int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (col >= cols) return;
  const int64_t h = col / dim;
  float sum = 0.0f;
  for (int64_t chunk = blockIdx.y; chunk * kRowsPerChunk < n; chunk += gridDim.y) {
    const int64_t end = min(n, (chunk + 1) * kRowsPerChunk);
    for (int64_t row = chunk * kRowsPerChunk; row < end; ++row) {
      sum += grad_el[row * heads + h] * feat[row * cols + col];
    }
  }
  atomicAdd(&grad_attn[col], sum);
}

// One warp per (destination row, head): three passes over the row's edges (max, sum of exp,
// write), lanes striding over edges. Rows are short in sampled blocks; a degree-10,000 row costs
// one warp 3 x 313 iterations, which is still far below the aggregation that follows.
__global__ void __launch_bounds__(kRowBlockThreads)
    EdgeSoftmaxForwardKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                             const int32_t* __restrict__ indices, int64_t heads,
                             const float* __restrict__ el, const float* __restrict__ er,
                             float slope, float* __restrict__ alpha) {
  const int lane = Lane();
  for (int64_t task = GlobalWarp(); task < num_dst * heads; task += WarpCount()) {
    const int64_t d = task / heads, h = task % heads;
    const int64_t begin = indptr[d], end = indptr[d + 1];
    if (begin == end) continue;
    const float er_dh = er[task];
    float row_max = -INFINITY;
    for (int64_t e = begin + lane; e < end; e += kWarpSize) {
      row_max = fmaxf(row_max, LeakyRelu(el[indices[e] * heads + h] + er_dh, slope));
    }
    row_max = WarpMax(row_max);
    float denom = 0.0f;
    for (int64_t e = begin + lane; e < end; e += kWarpSize) {
      denom += __expf(LeakyRelu(el[indices[e] * heads + h] + er_dh, slope) - row_max);
    }
    const float inv = 1.0f / WarpSum(denom);
    for (int64_t e = begin + lane; e < end; e += kWarpSize) {
      alpha[e * heads + h] =
          __expf(LeakyRelu(el[indices[e] * heads + h] + er_dh, slope) - row_max) * inv;
    }
  }
}

// One warp per (destination row, head). With g = grad_alpha and a = alpha over the row:
//   grad_score[e] = a[e] * (g[e] - sum_e' a[e'] g[e']),   grad_z = grad_score * LeakyReLU'(z)
// grad_er[d,h] is the warp's sum of grad_z (written once); grad_el[s,h] receives each edge's
// grad_z by atomicAdd (grad_el is zeroed first).
__global__ void __launch_bounds__(kRowBlockThreads)
    EdgeSoftmaxBackwardKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                              const int32_t* __restrict__ indices, int64_t heads,
                              const float* __restrict__ el, const float* __restrict__ er,
                              float slope, const float* __restrict__ alpha,
                              const float* __restrict__ grad_alpha, float* __restrict__ grad_el,
                              float* __restrict__ grad_er) {
  const int lane = Lane();
  for (int64_t task = GlobalWarp(); task < num_dst * heads; task += WarpCount()) {
    const int64_t d = task / heads, h = task % heads;
    const int64_t begin = indptr[d], end = indptr[d + 1];
    float dot = 0.0f;
    for (int64_t e = begin + lane; e < end; e += kWarpSize) {
      dot += alpha[e * heads + h] * grad_alpha[e * heads + h];
    }
    dot = WarpSum(dot);
    const float er_dh = er[task];
    float grad_er_sum = 0.0f;
    for (int64_t e = begin + lane; e < end; e += kWarpSize) {
      const int32_t s = indices[e];
      const float z = el[s * heads + h] + er_dh;
      const float grad_score = alpha[e * heads + h] * (grad_alpha[e * heads + h] - dot);
      const float grad_z = grad_score * (z > 0.0f ? 1.0f : slope);
      grad_er_sum += grad_z;
      atomicAdd(&grad_el[s * heads + h], grad_z);
    }
    grad_er_sum = WarpSum(grad_er_sum);
    if (lane == 0) grad_er[task] = grad_er_sum;
  }
}

// grad_alpha[e,h] = <grad_out[d,h,:], feat[s,h,:]>: one warp per (destination row, head), one
// shuffle-reduced dot product per edge.
__global__ void __launch_bounds__(kRowBlockThreads)
    GatGradAlphaKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                       const int32_t* __restrict__ indices, int64_t heads, int64_t dim,
                       const float* __restrict__ feat, const float* __restrict__ grad_out,
                       float* __restrict__ grad_alpha) {
  const int lane = Lane();
  for (int64_t task = GlobalWarp(); task < num_dst * heads; task += WarpCount()) {
    const int64_t d = task / heads, h = task % heads;
    const float* g = grad_out + task * dim;
    for (int64_t e = indptr[d]; e < indptr[d + 1]; ++e) {
      const float* f = feat + (static_cast<int64_t>(indices[e]) * heads + h) * dim;
      float sum = 0.0f;
      for (int64_t k = lane; k < dim; k += kWarpSize) sum += g[k] * f[k];
      sum = WarpSum(sum);
      if (lane == 0) grad_alpha[e * heads + h] = sum;
    }
  }
}

// Warp-per-task kernels: 8 warps per 256-thread block (see common.cuh).
unsigned WarpGrid(int64_t tasks) { return GridFor(tasks, kWarpsPerRowBlock); }
constexpr int kFlatThreads = 256;

// The SpMM of an attention aggregation: per head (segment), rows of `x` weighted by the edges'
// alpha (one per edge and head) summed into `out`.
SpmmArgs AttentionSpmmArgs(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                           int64_t heads, int64_t dim, const float* alpha, const float* x,
                           float* out) {
  SpmmArgs a;
  a.num_rows = num_dst;
  a.indptr = indptr;
  a.indices = indices;
  a.weight_kind = WeightKind::kEdge;
  a.edge_weight = alpha;
  a.segments = heads;
  a.dim = dim;
  a.x = x;
  a.out = out;
  return a;
}

}  // namespace

Status AttentionDot(int64_t n, int64_t heads, int64_t dim, const float* feat, const float* attn,
                    float* el, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("AttentionDot", n, heads, dim));
  if (n * heads == 0) return Status::Ok();
  AttentionDotKernel<<<WarpGrid(n * heads), kRowBlockThreads, 0, stream>>>(n, heads, dim, feat,
                                                                           attn, el);
  return CheckLaunch("AttentionDotKernel");
}

Status AttentionDotBackward(int64_t n, int64_t heads, int64_t dim, const float* feat,
                            const float* attn, const float* grad_el, float* grad_feat,
                            float* grad_attn, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("AttentionDotBackward", n, heads, dim));
  const int64_t total = n * heads * dim;
  if (total == 0) return Status::Ok();
  AttentionDotGradFeatKernel<<<GridFor(total, kFlatThreads), kFlatThreads, 0, stream>>>(
      n, heads, dim, attn, grad_el, grad_feat);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("AttentionDotGradFeatKernel"));
  // x: column tiles of 256; y: enough row chunks to fill the GPU (capped at 1024 so the atomics
  // into grad_attn stay few).
  const dim3 grid(static_cast<unsigned>(CeilDiv(heads * dim, kFlatThreads)),
                  static_cast<unsigned>(std::min<int64_t>(CeilDiv(n, kRowsPerChunk), 1024)));
  AttentionDotGradAttnKernel<<<grid, kFlatThreads, 0, stream>>>(n, heads, dim, feat, grad_el,
                                                                grad_attn);
  return CheckLaunch("AttentionDotGradAttnKernel");
}

Status GatEdgeSoftmaxForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                             int64_t heads, const float* el, const float* er, float negative_slope,
                             float* alpha, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatEdgeSoftmaxForward", num_dst, heads, 1));
  if (num_dst * heads == 0) return Status::Ok();
  EdgeSoftmaxForwardKernel<<<WarpGrid(num_dst * heads), kRowBlockThreads, 0, stream>>>(
      num_dst, indptr, indices, heads, el, er, negative_slope, alpha);
  return CheckLaunch("EdgeSoftmaxForwardKernel");
}

Status GatEdgeSoftmaxBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                              const int32_t* indices, int64_t heads, const float* el,
                              const float* er, float negative_slope, const float* alpha,
                              const float* grad_alpha, float* grad_el, float* grad_er,
                              cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatEdgeSoftmaxBackward", num_dst, heads, 1));
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatEdgeSoftmaxBackward", num_src, heads, 1));
  if (num_src * heads > 0) {
    SKIFF_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(grad_el, 0, sizeof(float) * num_src * heads, stream));
  }
  if (num_dst * heads == 0) return Status::Ok();
  EdgeSoftmaxBackwardKernel<<<WarpGrid(num_dst * heads), kRowBlockThreads, 0, stream>>>(
      num_dst, indptr, indices, heads, el, er, negative_slope, alpha, grad_alpha, grad_el, grad_er);
  return CheckLaunch("EdgeSoftmaxBackwardKernel");
}

Status GatAggregateForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                           int64_t heads, int64_t dim, const float* alpha, const float* feat,
                           float* out, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatAggregateForward", num_dst, heads, dim));
  return detail::LaunchSpmmGather(
      AttentionSpmmArgs(num_dst, indptr, indices, heads, dim, alpha, feat, out), stream);
}

Status GatAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                            const int32_t* indices, int64_t heads, int64_t dim, const float* alpha,
                            const float* feat, const float* grad_out, float* grad_feat,
                            float* grad_alpha, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatAggregateBackward", num_dst, heads, dim));
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatAggregateBackward", num_src, heads, dim));
  if (num_src * heads * dim > 0) {
    SKIFF_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(grad_feat, 0, sizeof(float) * num_src * heads * dim, stream));
  }
  if (num_dst * heads == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(detail::LaunchSpmmScatter(
      AttentionSpmmArgs(num_dst, indptr, indices, heads, dim, alpha, grad_out, grad_feat), stream));
  GatGradAlphaKernel<<<WarpGrid(num_dst * heads), kRowBlockThreads, 0, stream>>>(
      num_dst, indptr, indices, heads, dim, feat, grad_out, grad_alpha);
  return CheckLaunch("GatGradAlphaKernel");
}

}  // namespace skiff::cuda
