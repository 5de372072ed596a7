#include "kernels/cuda/link_score.cuh"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// --- Kernels ----------------------------------------------------------------------------------

// One warp per pair: lanes stride the columns (coalesced reads of both rows), then a warp sum.
__global__ void __launch_bounds__(kRowBlockThreads)
    PairScoresKernel(const float* __restrict__ emb, int64_t dim, const int32_t* __restrict__ src,
                     const int32_t* __restrict__ dst, int64_t n, const float* __restrict__ rel,
                     float* __restrict__ scores) {
  const int lane = Lane();
  for (int64_t pair = GlobalWarp(); pair < n; pair += WarpCount()) {
    const float* a = emb + static_cast<int64_t>(src[pair]) * dim;
    const float* b = emb + static_cast<int64_t>(dst[pair]) * dim;
    float sum = 0.0f;
    for (int64_t c = lane; c < dim; c += kWarpSize) {
      sum += a[c] * (rel != nullptr ? rel[c] : 1.0f) * b[c];
    }
    sum = WarpSum(sum);
    if (lane == 0) scores[pair] = sum;
  }
}

// One warp per pair; the two row updates are atomic (rows repeat across pairs, and a pair (v, v)
// updates one row twice).
__global__ void __launch_bounds__(kRowBlockThreads)
    PairScoresBackwardKernel(const float* __restrict__ emb, int64_t dim,
                             const int32_t* __restrict__ src, const int32_t* __restrict__ dst,
                             int64_t n, const float* __restrict__ rel,
                             const float* __restrict__ grad_scores, float* grad_emb) {
  const int lane = Lane();
  for (int64_t pair = GlobalWarp(); pair < n; pair += WarpCount()) {
    const int64_t s = src[pair], d = dst[pair];
    const float g = grad_scores[pair];
    for (int64_t c = lane; c < dim; c += kWarpSize) {
      const float gr = rel != nullptr ? g * rel[c] : g;
      const float a = emb[s * dim + c], b = emb[d * dim + c];
      atomicAdd(&grad_emb[s * dim + c], gr * b);
      atomicAdd(&grad_emb[d * dim + c], gr * a);
    }
  }
}

// Column sums of products: out[c] += sum_i w[i] * a[ra(i), c] * b[rb(i), c], where ra(i) is
// a_idx[i] (or i when a_idx is null), likewise rb, and w defaults to 1. Blocks of 32 columns x
// kColumnSumRows rows: a warp reads 32 consecutive floats of a row, each thread sums a strided
// slice of the rows, the block adds its kColumnSumRows partials in shared memory and issues one
// atomicAdd per column -- grad_rel's dim outputs would otherwise take an atomic per pair each.
constexpr int kColumnSumRows = 8;

__global__ void __launch_bounds__(kWarpSize* kColumnSumRows)
    ColumnProductSumKernel(const float* __restrict__ a, const int32_t* __restrict__ a_idx,
                           const float* __restrict__ b, const int32_t* __restrict__ b_idx,
                           const float* __restrict__ w, int64_t n, int64_t dim,
                           float* __restrict__ out) {
  __shared__ float partial[kColumnSumRows][kWarpSize + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kWarpSize + threadIdx.x;
  float sum = 0.0f;
  if (col < dim) {
    for (int64_t i = static_cast<int64_t>(blockIdx.y) * kColumnSumRows + threadIdx.y; i < n;
         i += static_cast<int64_t>(gridDim.y) * kColumnSumRows) {
      const int64_t ra = a_idx != nullptr ? a_idx[i] : i;
      const int64_t rb = b_idx != nullptr ? b_idx[i] : i;
      const float product = a[ra * dim + col] * b[rb * dim + col];
      sum += w != nullptr ? w[i] * product : product;
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < dim) {
    for (int r = 1; r < kColumnSumRows; ++r) sum += partial[r][threadIdx.x];
    atomicAdd(&out[col], sum);
  }
}

// out[row, :] = emb[idx[row], :] * (rel ? rel : 1); one warp per row.
__global__ void __launch_bounds__(kRowBlockThreads)
    GatherScaledKernel(const float* __restrict__ emb, int64_t dim, const int32_t* __restrict__ idx,
                       int64_t n, const float* __restrict__ rel, float* __restrict__ out) {
  const int lane = Lane();
  for (int64_t row = GlobalWarp(); row < n; row += WarpCount()) {
    const float* e = emb + static_cast<int64_t>(idx[row]) * dim;
    float* o = out + row * dim;
    for (int64_t c = lane; c < dim; c += kWarpSize) o[c] = e[c] * (rel != nullptr ? rel[c] : 1.0f);
  }
}

// grad_emb[idx[row], :] += rows[row, :] * (rel ? rel : 1); one warp per row, atomic.
__global__ void __launch_bounds__(kRowBlockThreads)
    ScatterAddScaledKernel(const float* __restrict__ rows, int64_t dim,
                           const int32_t* __restrict__ idx, int64_t n,
                           const float* __restrict__ rel, float* grad_emb) {
  const int lane = Lane();
  for (int64_t row = GlobalWarp(); row < n; row += WarpCount()) {
    const float* r = rows + row * dim;
    float* g = grad_emb + static_cast<int64_t>(idx[row]) * dim;
    for (int64_t c = lane; c < dim; c += kWarpSize)
      atomicAdd(&g[c], r[c] * (rel != nullptr ? rel[c] : 1.0f));
  }
}

__global__ void __launch_bounds__(kRowBlockThreads)
    PairHadamardKernel(const float* __restrict__ emb, int64_t dim, const int32_t* __restrict__ src,
                       const int32_t* __restrict__ dst, int64_t n, float* __restrict__ out) {
  const int lane = Lane();
  for (int64_t pair = GlobalWarp(); pair < n; pair += WarpCount()) {
    const float* a = emb + static_cast<int64_t>(src[pair]) * dim;
    const float* b = emb + static_cast<int64_t>(dst[pair]) * dim;
    float* o = out + pair * dim;
    for (int64_t c = lane; c < dim; c += kWarpSize) o[c] = a[c] * b[c];
  }
}

__global__ void __launch_bounds__(kRowBlockThreads)
    PairHadamardBackwardKernel(const float* __restrict__ emb, int64_t dim,
                               const int32_t* __restrict__ src, const int32_t* __restrict__ dst,
                               int64_t n, const float* __restrict__ grad_out, float* grad_emb) {
  const int lane = Lane();
  for (int64_t pair = GlobalWarp(); pair < n; pair += WarpCount()) {
    const int64_t s = src[pair], d = dst[pair];
    const float* g = grad_out + pair * dim;
    for (int64_t c = lane; c < dim; c += kWarpSize) {
      const float a = emb[s * dim + c], b = emb[d * dim + c];
      atomicAdd(&grad_emb[s * dim + c], g[c] * b);
      atomicAdd(&grad_emb[d * dim + c], g[c] * a);
    }
  }
}

__device__ __forceinline__ double WarpSumDouble(double v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Grid-stride over the scores; each thread sums its losses in double, then one atomicAdd per warp.
// softplus(s) - t s = max(s, 0) - t s + log1p(exp(-|s|)), as on the CPU.
__global__ void BceWithLogitsKernel(const float* __restrict__ scores, int64_t n, float target,
                                    float scale, float* __restrict__ grad, double* loss_sum) {
  double local = 0.0;
  SKIFF_GRID_STRIDE(i, n) {
    const float s = scores[i];
    const float e = expf(-fabsf(s));
    local += static_cast<double>(fmaxf(s, 0.0f) - target * s + log1pf(e));
    if (grad != nullptr) {
      const float sigmoid = s >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
      grad[i] = scale * (sigmoid - target);
    }
  }
  local = WarpSumDouble(local);
  if (Lane() == 0 && local != 0.0) atomicAdd(loss_sum, local);
}

// One warp per row [pos[row], neg[row*k .. row*k+k)]: max, then the negatives' sum of exp, both
// warp-reduced; lane 0 keeps the warp's loss sum and adds it once at the end. The positive's
// gradient is taken from the negatives' share, not as softmax - 1, which cancels in float when the
// positive's probability is near 1 (measured: 576 of 100,000 rows off by up to 1.8e-7 at k = 1).
__global__ void __launch_bounds__(kRowBlockThreads)
    SoftmaxNegativesKernel(const float* __restrict__ pos, const float* __restrict__ neg, int64_t n,
                           int64_t k, float scale, float* __restrict__ grad_pos,
                           float* __restrict__ grad_neg, double* loss_sum) {
  const int lane = Lane();
  double local = 0.0;
  for (int64_t row = GlobalWarp(); row < n; row += WarpCount()) {
    const float p = pos[row];
    const float* q = neg + row * k;
    float max_score = p;
    for (int64_t j = lane; j < k; j += kWarpSize) max_score = fmaxf(max_score, q[j]);
    max_score = WarpMax(max_score);
    float neg_sum = 0.0f;
    for (int64_t j = lane; j < k; j += kWarpSize) neg_sum += expf(q[j] - max_score);
    neg_sum = WarpSum(neg_sum);
    const float pos_term = expf(p - max_score);
    const float sum = pos_term + neg_sum;
    const float log_sum_exp = max_score + logf(sum);
    if (grad_neg != nullptr) {
      for (int64_t j = lane; j < k; j += kWarpSize)
        grad_neg[row * k + j] = scale * expf(q[j] - log_sum_exp);
    }
    if (lane == 0) {
      local += static_cast<double>(log_sum_exp - p);
      // softmax(p) - 1 = -(the negatives' share): no cancellation when the positive dominates.
      if (grad_pos != nullptr) grad_pos[row] = -scale * (neg_sum / sum);
    }
  }
  if (lane == 0 && local != 0.0) atomicAdd(loss_sum, local);
}

// --- Launchers
// ------------------------------------------------------------------------------------

// Blocks for the loss kernels: enough to fill the device, few enough that the per-warp atomics on
// the one loss address stay in the thousands.
constexpr int64_t kMaxLossBlocks = 1024;
constexpr int kFlatThreads = 256;

unsigned LossGrid(int64_t work_items, int64_t per_block) {
  return static_cast<unsigned>(
      std::clamp<int64_t>(CeilDiv(work_items, per_block), 1, kMaxLossBlocks));
}

// Warp-per-row kernels: 8 rows per 256-thread block (common.cuh).
unsigned RowGrid(int64_t rows) { return GridFor(rows, kWarpsPerRowBlock); }

Status CheckSizes(const char* op, int64_t dim, int64_t n, int64_t k = 0) {
  if (dim < 0 || n < 0 || k < 0) {
    return Status::InvalidArgument(std::string(op) + ": negative size (dim=" + std::to_string(dim) +
                                   ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ")");
  }
  return Status::Ok();
}

Status CheckNotNull(const char* op, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (p == nullptr) return Status::InvalidArgument(std::string(op) + ": null input or output");
  }
  return Status::Ok();
}

// out[c] += sum_i w[i] a[ra(i), c] b[rb(i), c] (ColumnProductSumKernel).
Status LaunchColumnProductSum(const float* a, const int32_t* a_idx, const float* b,
                              const int32_t* b_idx, const float* w, int64_t n, int64_t dim,
                              float* out, cudaStream_t stream) {
  // Row slices: enough blocks to fill the device for narrow dims, capped so each thread still
  // sums a few rows before its block's atomics.
  const int64_t row_slices = std::clamp<int64_t>(CeilDiv(n, kColumnSumRows * 4), 1, 256);
  const dim3 grid(static_cast<unsigned>(CeilDiv(dim, kWarpSize)),
                  static_cast<unsigned>(row_slices));
  ColumnProductSumKernel<<<grid, dim3(kWarpSize, kColumnSumRows), 0, stream>>>(a, a_idx, b, b_idx,
                                                                               w, n, dim, out);
  return CheckLaunch("ColumnProductSumKernel");
}

// The workspace segments: gathered (scaled) source rows, gathered candidates, and for the
// backward d(source rows) and d(candidates).
struct CrossWorkspace {
  float* src_rows;
  float* cand_rows;
  float* grad_src;
  float* grad_cand;
};

Result<CrossWorkspace> SplitWorkspace(const char* op, int64_t dim, int64_t n, int64_t k,
                                      void* workspace, size_t workspace_bytes) {
  SKIFF_ASSIGN_OR_RETURN(const size_t needed, CrossScoresWorkspaceBytes(dim, n, k));
  if (workspace_bytes < needed || (needed > 0 && workspace == nullptr)) {
    return Status::InvalidArgument(std::string(op) + ": workspace of " +
                                   std::to_string(workspace_bytes) + " bytes, needs " +
                                   std::to_string(needed) + " (CrossScoresWorkspaceBytes)");
  }
  const size_t src_bytes = AlignUp(sizeof(float) * static_cast<size_t>(n * dim));
  const size_t cand_bytes = AlignUp(sizeof(float) * static_cast<size_t>(k * dim));
  char* base = static_cast<char*>(workspace);
  return CrossWorkspace{reinterpret_cast<float*>(base), reinterpret_cast<float*>(base + src_bytes),
                        reinterpret_cast<float*>(base + src_bytes + cand_bytes),
                        reinterpret_cast<float*>(base + 2 * src_bytes + cand_bytes)};
}

}  // namespace

Status PairScores(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst, int64_t n,
                  const float* rel, float* scores, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("PairScores", dim, n));
  if (n == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("PairScores", {src, dst, scores}));
  if (dim > 0) SKIFF_RETURN_IF_ERROR(CheckNotNull("PairScores", {emb}));
  PairScoresKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(emb, dim, src, dst, n, rel, scores);
  return CheckLaunch("PairScoresKernel");
}

Status PairScoresBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                          int64_t n, const float* rel, const float* grad_scores, float* grad_emb,
                          float* grad_rel, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("PairScoresBackward", dim, n));
  if (n == 0 || dim == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("PairScoresBackward", {emb, src, dst, grad_scores, grad_emb}));
  PairScoresBackwardKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(emb, dim, src, dst, n, rel,
                                                                        grad_scores, grad_emb);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("PairScoresBackwardKernel"));
  if (rel == nullptr || grad_rel == nullptr) return Status::Ok();
  return LaunchColumnProductSum(emb, src, emb, dst, grad_scores, n, dim, grad_rel, stream);
}

Result<size_t> CrossScoresWorkspaceBytes(int64_t dim, int64_t n, int64_t k) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("CrossScoresWorkspaceBytes", dim, n, k));
  return 2 * (AlignUp(sizeof(float) * static_cast<size_t>(n * dim)) +
              AlignUp(sizeof(float) * static_cast<size_t>(k * dim)));
}

Status CrossScores(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                   const int32_t* cand, int64_t k, const float* rel, float* scores, void* workspace,
                   size_t workspace_bytes, const CublasHandle& handle, GemmPrecision precision,
                   cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("CrossScores", dim, n, k));
  SKIFF_ASSIGN_OR_RETURN(const CrossWorkspace ws,
                         SplitWorkspace("CrossScores", dim, n, k, workspace, workspace_bytes));
  if (n == 0 || k == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("CrossScores", {src, cand, scores}));
  if (dim == 0) {  // empty dot products; cuBLAS is not asked for a zero-width row stride
    SKIFF_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(scores, 0, sizeof(float) * static_cast<size_t>(n * k), stream));
    return Status::Ok();
  }
  SKIFF_RETURN_IF_ERROR(CheckNotNull("CrossScores", {emb}));
  GatherScaledKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(emb, dim, src, n, rel,
                                                                  ws.src_rows);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("GatherScaledKernel"));
  GatherScaledKernel<<<RowGrid(k), kRowBlockThreads, 0, stream>>>(emb, dim, cand, k, nullptr,
                                                                  ws.cand_rows);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("GatherScaledKernel"));
  // scores (n x k) = (S R) C^T.
  return Gemm(false, true, n, k, dim, 1.0f, ws.src_rows, dim, ws.cand_rows, dim, 0.0f, scores, k,
              handle, precision, stream);
}

Status CrossScoresBackward(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                           const int32_t* cand, int64_t k, const float* rel,
                           const float* grad_scores, float* grad_emb, float* grad_rel,
                           void* workspace, size_t workspace_bytes, const CublasHandle& handle,
                           GemmPrecision precision, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("CrossScoresBackward", dim, n, k));
  SKIFF_ASSIGN_OR_RETURN(const CrossWorkspace ws, SplitWorkspace("CrossScoresBackward", dim, n, k,
                                                                 workspace, workspace_bytes));
  if (n == 0 || k == 0 || dim == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(
      CheckNotNull("CrossScoresBackward", {emb, src, cand, grad_scores, grad_emb}));
  GatherScaledKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(emb, dim, src, n, rel,
                                                                  ws.src_rows);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("GatherScaledKernel"));
  GatherScaledKernel<<<RowGrid(k), kRowBlockThreads, 0, stream>>>(emb, dim, cand, k, nullptr,
                                                                  ws.cand_rows);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("GatherScaledKernel"));
  // As on the CPU: d S = (G C) R, d C = G^T (S R), d rel = column sums of S * (G C).
  SKIFF_RETURN_IF_ERROR(Gemm(false, false, n, dim, k, 1.0f, grad_scores, k, ws.cand_rows, dim, 0.0f,
                             ws.grad_src, dim, handle, precision, stream));
  SKIFF_RETURN_IF_ERROR(Gemm(true, false, k, dim, n, 1.0f, grad_scores, k, ws.src_rows, dim, 0.0f,
                             ws.grad_cand, dim, handle, precision, stream));
  ScatterAddScaledKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(ws.grad_src, dim, src, n, rel,
                                                                      grad_emb);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("ScatterAddScaledKernel"));
  ScatterAddScaledKernel<<<RowGrid(k), kRowBlockThreads, 0, stream>>>(ws.grad_cand, dim, cand, k,
                                                                      nullptr, grad_emb);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("ScatterAddScaledKernel"));
  if (rel == nullptr || grad_rel == nullptr) return Status::Ok();
  return LaunchColumnProductSum(emb, src, ws.grad_src, nullptr, nullptr, n, dim, grad_rel, stream);
}

Status PairHadamard(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                    int64_t n, float* out, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("PairHadamard", dim, n));
  if (n == 0 || dim == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("PairHadamard", {emb, src, dst, out}));
  PairHadamardKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(emb, dim, src, dst, n, out);
  return CheckLaunch("PairHadamardKernel");
}

Status PairHadamardBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                            int64_t n, const float* grad_out, float* grad_emb,
                            cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("PairHadamardBackward", dim, n));
  if (n == 0 || dim == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("PairHadamardBackward", {emb, src, dst, grad_out, grad_emb}));
  PairHadamardBackwardKernel<<<RowGrid(n), kRowBlockThreads, 0, stream>>>(emb, dim, src, dst, n,
                                                                          grad_out, grad_emb);
  return CheckLaunch("PairHadamardBackwardKernel");
}

Status BceWithLogits(const float* scores, int64_t n, float target, float scale, float* grad,
                     double* loss_sum, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("BceWithLogits", 0, n));
  if (loss_sum == nullptr) return Status::InvalidArgument("BceWithLogits: loss_sum is null");
  SKIFF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(loss_sum, 0, sizeof(double), stream));
  if (n == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("BceWithLogits", {scores}));
  BceWithLogitsKernel<<<LossGrid(n, kFlatThreads), kFlatThreads, 0, stream>>>(
      scores, n, target, scale, grad, loss_sum);
  return CheckLaunch("BceWithLogitsKernel");
}

Status SoftmaxNegatives(const float* pos, const float* neg, int64_t n, int64_t k, float scale,
                        float* grad_pos, float* grad_neg, double* loss_sum, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("SoftmaxNegatives", 0, n, k));
  if (loss_sum == nullptr) return Status::InvalidArgument("SoftmaxNegatives: loss_sum is null");
  SKIFF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(loss_sum, 0, sizeof(double), stream));
  if (n == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckNotNull("SoftmaxNegatives", {pos}));
  if (k > 0) SKIFF_RETURN_IF_ERROR(CheckNotNull("SoftmaxNegatives", {neg}));
  SoftmaxNegativesKernel<<<LossGrid(n, kWarpsPerRowBlock), kRowBlockThreads, 0, stream>>>(
      pos, neg, n, k, scale, grad_pos, grad_neg, loss_sum);
  return CheckLaunch("SoftmaxNegativesKernel");
}

}  // namespace skiff::cuda
