// GAT attention over a CSR block, multi-head.
//   Scores: for edge e = (d, s) and head h,
//     score[e,h] = LeakyReLU(el[s,h] + er[d,h], negative_slope)
//   el (num_src x heads) = <x_s, a_l>, er (num_dst x heads) = <x_d, a_r> are computed by the caller
//   (AttentionDot below).
//   Edge softmax: alpha[e,h] = exp(score[e,h] - max_row) / sum_row exp(...), over the edges of row d
//   (rows of degree 0 have no edges and produce nothing).
//   Aggregation: out[d,h,:] = sum_e alpha[e,h] * feat[s,h,:]   (feat is num_src x heads x dim).
// Backward functions *overwrite* their outputs.
#pragma once
#include <cstdint>

namespace skiff::cpu {

// el[n,h] = sum_k feat[n,h,k] * attn[h,k]  (feat n x heads x dim, attn heads x dim, el n x heads)
void AttentionDot(int64_t n, int64_t heads, int64_t dim, const float* feat, const float* attn,
                  float* el);
// grad_feat[n,h,k] += grad_el[n,h] * attn[h,k]  (accumulates);
// grad_attn[h,k]   += sum_n grad_el[n,h] * feat[n,h,k]  (accumulates)
void AttentionDotBackward(int64_t n, int64_t heads, int64_t dim, const float* feat,
                          const float* attn, const float* grad_el, float* grad_feat,
                          float* grad_attn);

// Fused scores + edge softmax: writes alpha (nnz x heads). Keeps the pre-softmax score only
// implicitly: the backward recomputes what it needs from el, er.
void GatEdgeSoftmaxForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                           int64_t heads, const float* el, const float* er, float negative_slope,
                           float* alpha);
// Given grad_alpha (nnz x heads), writes grad_el (num_src x heads, overwritten) and grad_er
// (num_dst x heads, overwritten), through the softmax and the LeakyReLU.
void GatEdgeSoftmaxBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                            const int32_t* indices, int64_t heads, const float* el,
                            const float* er, float negative_slope, const float* alpha,
                            const float* grad_alpha, float* grad_el, float* grad_er);

// out[d,h,:] = sum_e alpha[e,h] * feat[s,h,:]  (out num_dst x heads x dim, overwritten)
void GatAggregateForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                         int64_t heads, int64_t dim, const float* alpha, const float* feat,
                         float* out);
// grad_feat (num_src x heads x dim) and grad_alpha (nnz x heads), both overwritten.
void GatAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                          const int32_t* indices, int64_t heads, int64_t dim, const float* alpha,
                          const float* feat, const float* grad_out, float* grad_feat,
                          float* grad_alpha);

}  // namespace skiff::cpu
