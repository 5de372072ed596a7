// CUDA CSR aggregation: the GPU mirror of kernels/cpu/csr_aggregate.h (same names, argument order
// and semantics; all pointers are device pointers, plus a trailing stream). See that header for
// the maths; only the differences are described here.
//
// Backward. CsrAggregateBackward scatters with atomicAdd (after zeroing grad_x): it needs no
// workspace, which keeps the CPU contract, but float atomics make the summation order -- and so
// the last bits of grad_x -- vary run to run. Where the same block is differentiated more than
// once, or bitwise determinism matters, build the block's transpose once (CsrTranspose: a stable
// radix sort of edges by source) and call CsrAggregateBackwardTransposed, which gathers without
// atomics, deterministically, in the CPU reference's per-row edge order (but see "Long rows").
// docs/cuda.md records the trade-off.
//
// kWeighted without edge_weight: accepted for a block without edges (nnz == 0), as on the CPU. The
// host cannot see nnz (indptr is device memory and entry points do not synchronise), so such a
// call launches a one-thread check first: if the block has edges after all, it traps -- a sticky
// launch failure (the CPU reference aborts in the same case) reported by the next CUDA call or
// synchronisation, with a device printf naming the op. With a null indptr there is nothing to
// check against, and the call is refused on the host.
//
// Long rows. Rows of more than detail::kGatherLongRowEdges edges (kScatterLongRowEdges for the
// atomic backward; hub rows of full-neighbourhood blocks, power-law degrees) are split over several
// blocks of warps (kernels/cuda/spmm.cuh); the forward
// and the transposed backward stay deterministic, but such rows sum their edges in a different
// order than the CPU (rows up to the threshold keep the CPU's order at dims >= 128 with float4).
//
// Errors: InvalidArgument for inconsistent shapes (negative sizes, missing pointers for a non-empty
// block, kWeighted without edge_weight or indptr, too small a workspace); Internal/
// ResourceExhausted from the CUDA runtime for failed launches. Indices are trusted to lie in
// [0, num_src) (as on the CPU).
// Thread safety: stateless; concurrent calls on different streams are independent.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/csr_aggregate.h"
#include "skiff/status.h"

namespace skiff::cuda {

using skiff::cpu::AggregateMode;

Status CsrAggregateForward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                           const int32_t* indices, const float* edge_weight, AggregateMode mode,
                           const float* x, int64_t dim, float* out, cudaStream_t stream);

// grad_x is overwritten (zeroed on `stream`, then accumulated with atomics).
Status CsrAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                            const int32_t* indices, const float* edge_weight, AggregateMode mode,
                            const float* grad_out, int64_t dim, float* grad_x, cudaStream_t stream);

// The within-block form of cpu::GcnEdgeWeights (src_degree == nullptr). Differs from the CPU
// signature by `src_degree_workspace` (num_src int32s of device memory, any contents), where the
// block's per-source out-degrees are counted. The CUDA model computes whole-graph-degree weights
// on the host with cpu::GcnEdgeWeights (an O(edges) step it already does to add self-loops).
Status GcnEdgeWeights(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                      const int32_t* indices, float* edge_weight, float* self_weight,
                      int32_t* src_degree_workspace, cudaStream_t stream);

// The transpose of a block: for source s, its edges are t.indices[t.indptr[s]..t.indptr[s+1])
// (destination rows, ascending) and t.edge_ids[...] (their positions in the original CSR).
struct TransposedCsr {
  int64_t* indptr = nullptr;    // num_src + 1
  int32_t* indices = nullptr;   // nnz
  int32_t* edge_ids = nullptr;  // nnz
};

// Device bytes CsrTranspose needs as scratch for a block of `nnz` edges over `num_src` sources.
// Returns InvalidArgument when nnz or num_src exceed int32 (cub's radix sort limits).
Result<size_t> CsrTransposeWorkspaceBytes(int64_t nnz, int64_t num_src);

// Fills `t` (caller-allocated device arrays) from the block; deterministic (stable sort).
Status CsrTranspose(int64_t num_dst, int64_t num_src, const int64_t* indptr, const int32_t* indices,
                    int64_t nnz, const TransposedCsr& t, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream);

// Same result as CsrAggregateBackward, computed as a gather over the transpose (no atomics;
// grad_x overwritten). `indptr` is the original block's (needed for kMean's 1/deg(d)).
Status CsrAggregateBackwardTransposed(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                                      const TransposedCsr& t, const float* edge_weight,
                                      AggregateMode mode, const float* grad_out, int64_t dim,
                                      float* grad_x, cudaStream_t stream);

}  // namespace skiff::cuda
