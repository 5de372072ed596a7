#include "kernels/cuda/csr_aggregate.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cstdio>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/spmm.cuh"

namespace skiff::cuda {
namespace {

using detail::SpmmArgs;
using detail::WeightKind;

Status CheckBlock(const char* op, int64_t num_dst, int64_t num_src, const int64_t* indptr,
                  const int32_t* indices, int64_t dim) {
  if (num_dst < 0 || num_src < 0 || dim < 0) {
    return Status::InvalidArgument(
        std::string(op) + ": negative size (num_dst=" + std::to_string(num_dst) +
        ", num_src=" + std::to_string(num_src) + ", dim=" + std::to_string(dim) + ")");
  }
  if (num_dst > 0 && indptr == nullptr) {
    return Status::InvalidArgument(std::string(op) + ": indptr is null for " +
                                   std::to_string(num_dst) + " rows");
  }
  if (num_src > INT32_MAX) {
    return Status::InvalidArgument(std::string(op) + ": num_src " + std::to_string(num_src) +
                                   " exceeds int32 source IDs");
  }
  (void)indices;
  return Status::Ok();
}

// kWeighted with a null edge_weight: accepted for a block without edges, as on the CPU (whose
// check reads indptr[num_dst]). The host cannot read the device-resident indptr without a sync, so
// it refuses only what it can see (a null indptr: nothing to check the block against), and
// `*unweighted` tells the caller to launch RequireNoEdgesKernel first and aggregate with unit
// weights, which no edge then uses.
Status CheckMode(const char* op, int64_t num_dst, const int64_t* indptr, AggregateMode mode,
                 const float* edge_weight, bool* unweighted) {
  *unweighted = mode == AggregateMode::kWeighted && edge_weight == nullptr;
  if (*unweighted && indptr == nullptr) {
    return Status::InvalidArgument(
        std::string(op) + ": kWeighted needs edge_weight (null is accepted only for a block " +
        "without edges, and indptr is null for " + std::to_string(num_dst) + " rows)");
  }
  return Status::Ok();
}

// The device half of CheckMode's contract: a block given kWeighted without edge_weight must have
// no edges. If it has, the kernel traps -- a sticky launch failure reported by the next CUDA call
// or synchronisation, the device form of the CPU reference's SKIFF_CHECK abort -- so nothing
// after it on the stream can read the missing weights. The op's name travels as an enum: the
// device cannot read a host string.
enum class AggregateOp : int { kForward = 0, kBackward = 1, kBackwardTransposed = 2 };

__global__ void RequireNoEdgesKernel(int64_t num_rows, const int64_t* __restrict__ indptr,
                                     AggregateOp op) {
  const int64_t nnz = indptr[num_rows] - indptr[0];
  if (nnz != 0) {
    const char* name = op == AggregateOp::kForward    ? "CsrAggregateForward"
                       : op == AggregateOp::kBackward ? "CsrAggregateBackward"
                                                      : "CsrAggregateBackwardTransposed";
    printf("%s: kWeighted with a null edge_weight on a block of %lld edges\n", name,
           static_cast<long long>(nnz));
    __trap();
  }
}

// Launches RequireNoEdgesKernel where CheckMode asked for it (nothing to check without rows).
Status RequireNoEdges(bool unweighted, AggregateOp op, int64_t num_dst, const int64_t* indptr,
                      cudaStream_t stream) {
  if (!unweighted || num_dst == 0) return Status::Ok();
  RequireNoEdgesKernel<<<1, 1, 0, stream>>>(num_dst, indptr, op);
  return CheckLaunch("RequireNoEdgesKernel");
}

WeightKind ForwardWeightKind(AggregateMode mode) {
  switch (mode) {
    case AggregateMode::kSum:
      return WeightKind::kOne;
    case AggregateMode::kMean:
      return WeightKind::kRowMean;
    case AggregateMode::kWeighted:
      return WeightKind::kEdge;
  }
  return WeightKind::kOne;
}

// The SpMM of a block aggregation in `mode` (kOne when `unweighted`: a block with no edges).
SpmmArgs BlockSpmmArgs(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                       const float* edge_weight, bool unweighted, AggregateMode mode, int64_t dim,
                       const float* x, float* out) {
  SpmmArgs a;
  a.num_rows = num_dst;
  a.indptr = indptr;
  a.indices = indices;
  a.weight_kind = unweighted ? WeightKind::kOne : ForwardWeightKind(mode);
  a.edge_weight = edge_weight;
  a.dim = dim;
  a.x = x;
  a.out = out;
  return a;
}

// One thread per destination row, looping over its edges: count each source's out-degree in the
// block (integer atomics, so the result is exact and order-independent). Walking rows rather than
// edges means nnz never has to be read back to the host.
__global__ void CountSourceDegreeKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                                        const int32_t* __restrict__ indices,
                                        int32_t* __restrict__ degree) {
  for (int64_t d = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; d < num_dst;
       d += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int64_t e = indptr[d]; e < indptr[d + 1]; ++e) atomicAdd(&degree[indices[e]], 1);
  }
}

// One thread per destination row, looping over its edges (degrees are read from indptr; the
// loop is short for sampled blocks, and the weights are written coalesced across a warp's rows
// only approximately -- this kernel is O(nnz) and runs once per block).
__global__ void GcnWeightsKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                                 const int32_t* __restrict__ indices,
                                 const int32_t* __restrict__ src_degree,
                                 float* __restrict__ edge_weight, float* __restrict__ self_weight) {
  for (int64_t d = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; d < num_dst;
       d += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t begin = indptr[d], end = indptr[d + 1];
    const float in_deg1 = static_cast<float>(end - begin + 1);
    for (int64_t e = begin; e < end; ++e) {
      const float out_deg1 = static_cast<float>(src_degree[indices[e]] + 1);
      edge_weight[e] = rsqrtf(in_deg1 * out_deg1);
    }
    self_weight[d] = 1.0f / in_deg1;
  }
}

__global__ void IotaKernel(int64_t n, int32_t* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<int32_t>(i);
  }
}

// t_indptr[s] = first position in the sorted keys whose source is >= s (binary search), for
// s in [0, num_src]; t_indices[j] = the destination row owning original edge edge_ids[j]
// (upper-bound search in the original indptr).
__global__ void TransposeOffsetsKernel(int64_t num_dst, int64_t num_src, int64_t nnz,
                                       const int64_t* __restrict__ indptr,
                                       const int32_t* __restrict__ sorted_src,
                                       const int32_t* __restrict__ edge_ids,
                                       int64_t* __restrict__ t_indptr,
                                       int32_t* __restrict__ t_indices) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (int64_t s = first; s <= num_src; s += stride) {
    int64_t lo = 0, hi = nnz;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (sorted_src[mid] < s)
        lo = mid + 1;
      else
        hi = mid;
    }
    t_indptr[s] = lo;
  }
  for (int64_t j = first; j < nnz; j += stride) {
    const int64_t e = edge_ids[j];
    int64_t lo = 0, hi = num_dst;  // find the last d with indptr[d] <= e
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (indptr[mid] <= e)
        lo = mid;
      else
        hi = mid - 1;
    }
    t_indices[j] = static_cast<int32_t>(lo);
  }
}

int RadixBits(int64_t num_src) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < num_src) ++bits;
  return bits;
}

// Element-wise helper kernels: 256 threads, one element per thread, grid-stride past
// kMaxGridBlocks.
constexpr int kFlatThreads = 256;

}  // namespace

Status CsrAggregateForward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                           const int32_t* indices, const float* edge_weight, AggregateMode mode,
                           const float* x, int64_t dim, float* out, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckBlock("CsrAggregateForward", num_dst, num_src, indptr, indices, dim));
  bool unweighted = false;
  SKIFF_RETURN_IF_ERROR(
      CheckMode("CsrAggregateForward", num_dst, indptr, mode, edge_weight, &unweighted));
  SKIFF_RETURN_IF_ERROR(RequireNoEdges(unweighted, AggregateOp::kForward, num_dst, indptr, stream));
  return detail::LaunchSpmmGather(
      BlockSpmmArgs(num_dst, indptr, indices, edge_weight, unweighted, mode, dim, x, out), stream);
}

Status CsrAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                            const int32_t* indices, const float* edge_weight, AggregateMode mode,
                            const float* grad_out, int64_t dim, float* grad_x,
                            cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckBlock("CsrAggregateBackward", num_dst, num_src, indptr, indices, dim));
  bool unweighted = false;
  SKIFF_RETURN_IF_ERROR(
      CheckMode("CsrAggregateBackward", num_dst, indptr, mode, edge_weight, &unweighted));
  SKIFF_RETURN_IF_ERROR(
      RequireNoEdges(unweighted, AggregateOp::kBackward, num_dst, indptr, stream));
  if (num_src * dim > 0) {
    SKIFF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(grad_x, 0, sizeof(float) * num_src * dim, stream));
  }
  return detail::LaunchSpmmScatter(
      BlockSpmmArgs(num_dst, indptr, indices, edge_weight, unweighted, mode, dim, grad_out, grad_x),
      stream);
}

Status GcnEdgeWeights(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                      const int32_t* indices, float* edge_weight, float* self_weight,
                      int32_t* src_degree_workspace, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckBlock("GcnEdgeWeights", num_dst, num_src, indptr, indices, 1));
  if (num_dst == 0) return Status::Ok();
  if (num_src > 0) {
    SKIFF_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(src_degree_workspace, 0, sizeof(int32_t) * num_src, stream));
  }
  CountSourceDegreeKernel<<<GridFor(num_dst, kFlatThreads), kFlatThreads, 0, stream>>>(
      num_dst, indptr, indices, src_degree_workspace);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("CountSourceDegreeKernel"));
  GcnWeightsKernel<<<GridFor(num_dst, kFlatThreads), kFlatThreads, 0, stream>>>(
      num_dst, indptr, indices, src_degree_workspace, edge_weight, self_weight);
  return CheckLaunch("GcnWeightsKernel");
}

Result<size_t> CsrTransposeWorkspaceBytes(int64_t nnz, int64_t num_src) {
  if (nnz < 0 || nnz > INT32_MAX || num_src < 0 || num_src > INT32_MAX) {
    return Status::InvalidArgument("CsrTranspose: nnz " + std::to_string(nnz) + " or num_src " +
                                   std::to_string(num_src) + " outside [0, 2^31)");
  }
  size_t sort_bytes = 0;
  if (nnz > 0) {
    SKIFF_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
        nullptr, sort_bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
        static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), static_cast<int>(nnz),
        0, RadixBits(num_src)));
  }
  // sorted keys + iota values + cub's scratch
  return 2 * AlignUp(sizeof(int32_t) * static_cast<size_t>(nnz)) + AlignUp(sort_bytes);
}

Status CsrTranspose(int64_t num_dst, int64_t num_src, const int64_t* indptr, const int32_t* indices,
                    int64_t nnz, const TransposedCsr& t, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckBlock("CsrTranspose", num_dst, num_src, indptr, indices, 1));
  SKIFF_ASSIGN_OR_RETURN(const size_t needed, CsrTransposeWorkspaceBytes(nnz, num_src));
  if (workspace_bytes < needed) {
    return Status::InvalidArgument("CsrTranspose: workspace of " + std::to_string(workspace_bytes) +
                                   " bytes, needs " + std::to_string(needed));
  }
  auto* sorted_src = static_cast<int32_t*>(workspace);
  auto* iota = reinterpret_cast<int32_t*>(static_cast<char*>(workspace) +
                                          AlignUp(sizeof(int32_t) * static_cast<size_t>(nnz)));
  void* sort_scratch =
      static_cast<char*>(workspace) + 2 * AlignUp(sizeof(int32_t) * static_cast<size_t>(nnz));
  size_t sort_bytes = needed - 2 * AlignUp(sizeof(int32_t) * static_cast<size_t>(nnz));
  if (nnz > 0) {
    IotaKernel<<<GridFor(nnz, kFlatThreads), kFlatThreads, 0, stream>>>(nnz, iota);
    SKIFF_RETURN_IF_ERROR(CheckLaunch("IotaKernel"));
    SKIFF_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
        sort_scratch, sort_bytes, indices, sorted_src, iota, t.edge_ids, static_cast<int>(nnz), 0,
        RadixBits(num_src), stream));
  }
  // Threads cover max(num_src + 1, nnz) items: one launch fills both arrays.
  TransposeOffsetsKernel<<<GridFor(std::max(num_src + 1, nnz), kFlatThreads), kFlatThreads, 0,
                           stream>>>(num_dst, num_src, nnz, indptr, sorted_src, t.edge_ids,
                                     t.indptr, t.indices);
  return CheckLaunch("TransposeOffsetsKernel");
}

Status CsrAggregateBackwardTransposed(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                                      const TransposedCsr& t, const float* edge_weight,
                                      AggregateMode mode, const float* grad_out, int64_t dim,
                                      float* grad_x, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(
      CheckBlock("CsrAggregateBackwardTransposed", num_dst, num_src, indptr, t.indices, dim));
  bool unweighted = false;
  SKIFF_RETURN_IF_ERROR(
      CheckMode("CsrAggregateBackwardTransposed", num_dst, indptr, mode, edge_weight, &unweighted));
  if (num_src > 0 && t.indptr == nullptr) {
    return Status::InvalidArgument("CsrAggregateBackwardTransposed: transposed indptr is null");
  }
  SKIFF_RETURN_IF_ERROR(
      RequireNoEdges(unweighted, AggregateOp::kBackwardTransposed, num_dst, indptr, stream));
  SpmmArgs a;
  a.num_rows = num_src;
  a.indptr = t.indptr;
  a.indices = t.indices;
  a.edge_ids = t.edge_ids;
  a.edge_weight = edge_weight;
  a.mean_indptr = indptr;
  a.weight_kind = mode == AggregateMode::kSum || unweighted ? WeightKind::kOne
                  : mode == AggregateMode::kMean            ? WeightKind::kGatheredMean
                                                            : WeightKind::kEdge;
  a.dim = dim;
  a.x = grad_out;
  a.out = grad_x;
  return detail::LaunchSpmmGather(a, stream);
}

}  // namespace skiff::cuda
