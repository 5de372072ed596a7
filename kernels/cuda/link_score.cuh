// CUDA link-score kernels: the GPU mirror of kernels/cpu/link_score.h (same names, argument order
// and semantics on device pointers, plus a trailing stream), with these differences:
//   - CrossScores / CrossScoresBackward run cuBLAS GEMMs on gathered rows: they take a cuBLAS
//     handle, a precision (kFp32 matches the CPU to rounding) and a caller-provided device
//     workspace of at least CrossScoresWorkspaceBytes(dim, n, k) bytes (the same size serves the
//     forward and the backward; nothing allocates here).
//   - BceWithLogits and SoftmaxNegatives write their loss sum to `*loss_sum`, one double of device
//     memory (overwritten), instead of returning it, so the ops never synchronise the stream.
//   - The backward ops (and the loss sums) accumulate with atomicAdd: repeated rows are summed in
//     an order that varies from run to run, so results match the CPU to rounding, not bit for bit.
//     grad_rel is reduced per block over columns first (one atomic per column and block).
//
// Errors: InvalidArgument for negative sizes, null pointers the op needs (checked only when there
// is work), a null loss_sum, or a workspace too small; Internal from the CUDA runtime or cuBLAS.
// Indices are trusted to lie in [0, rows), as on the CPU (not checked on the device).
// Thread safety: stateless; calls on different streams are independent (the cuBLAS handle is one
// host thread's at a time, see gemm.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/gemm.cuh"
#include "skiff/status.h"

namespace skiff::cuda {

Status PairScores(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst, int64_t n,
                  const float* rel, float* scores, cudaStream_t stream);
Status PairScoresBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                          int64_t n, const float* rel, const float* grad_scores, float* grad_emb,
                          float* grad_rel, cudaStream_t stream);

// Device bytes CrossScores and CrossScoresBackward need for `n` sources, `k` candidates and rows
// of `dim` floats: 2 (n + k) dim floats, in 256-byte aligned segments. InvalidArgument for
// negative sizes.
Result<size_t> CrossScoresWorkspaceBytes(int64_t dim, int64_t n, int64_t k);
Status CrossScores(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                   const int32_t* cand, int64_t k, const float* rel, float* scores, void* workspace,
                   size_t workspace_bytes, const CublasHandle& handle, GemmPrecision precision,
                   cudaStream_t stream);
Status CrossScoresBackward(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                           const int32_t* cand, int64_t k, const float* rel,
                           const float* grad_scores, float* grad_emb, float* grad_rel,
                           void* workspace, size_t workspace_bytes, const CublasHandle& handle,
                           GemmPrecision precision, cudaStream_t stream);

Status PairHadamard(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                    int64_t n, float* out, cudaStream_t stream);
Status PairHadamardBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                            int64_t n, const float* grad_out, float* grad_emb, cudaStream_t stream);

Status BceWithLogits(const float* scores, int64_t n, float target, float scale, float* grad,
                     double* loss_sum, cudaStream_t stream);
Status SoftmaxNegatives(const float* pos, const float* neg, int64_t n, int64_t k, float scale,
                        float* grad_pos, float* grad_neg, double* loss_sum, cudaStream_t stream);

}  // namespace skiff::cuda
