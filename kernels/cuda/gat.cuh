// CUDA GAT attention: the GPU mirror of kernels/cpu/gat.h (same names, argument order and
// semantics; device pointers, plus a trailing stream). See that header for the maths.
//
// Backward ops overwrite their outputs, except AttentionDotBackward, which accumulates (as on the
// CPU). Scatters into per-source gradients (grad_el, grad_feat) use float atomics, so their last
// bits vary run to run; everything else is computed in a fixed order.
//
// Errors: InvalidArgument for negative sizes or missing pointers; Internal/ResourceExhausted from
// the CUDA runtime. Thread safety: stateless; calls on different streams are independent.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda {

Status AttentionDot(int64_t n, int64_t heads, int64_t dim, const float* feat, const float* attn,
                    float* el, cudaStream_t stream);
Status AttentionDotBackward(int64_t n, int64_t heads, int64_t dim, const float* feat,
                            const float* attn, const float* grad_el, float* grad_feat,
                            float* grad_attn, cudaStream_t stream);
Status GatEdgeSoftmaxForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                             int64_t heads, const float* el, const float* er, float negative_slope,
                             float* alpha, cudaStream_t stream);
Status GatEdgeSoftmaxBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                              const int32_t* indices, int64_t heads, const float* el,
                              const float* er, float negative_slope, const float* alpha,
                              const float* grad_alpha, float* grad_el, float* grad_er,
                              cudaStream_t stream);
Status GatAggregateForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                           int64_t heads, int64_t dim, const float* alpha, const float* feat,
                           float* out, cudaStream_t stream);
Status GatAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                            const int32_t* indices, int64_t heads, int64_t dim, const float* alpha,
                            const float* feat, const float* grad_out, float* grad_feat,
                            float* grad_alpha, cudaStream_t stream);

}  // namespace skiff::cuda
