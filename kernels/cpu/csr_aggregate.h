// CSR aggregation (SpMM over a sampled block): out[d] = reduce_{e in row d} w_e * x[indices[e]].
//   kSum:      w_e = 1
//   kMean:     w_e = 1 / deg(d)   (rows of degree 0 produce zeros)
//   kWeighted: w_e = edge_weight[e] (e.g. GCN's 1/sqrt(deg_d * deg_s), see GcnEdgeWeights)
// Shapes: x is num_src x dim, out is num_dst x dim (overwritten), indptr num_dst+1, indices nnz,
// edge_weight nnz (only read for kWeighted; may be null otherwise).
// Backward: grad_x (num_src x dim) is *overwritten* with sum over edges e=(d,s) of w_e * grad_out[d].
#pragma once
#include <cstdint>

namespace skiff::cpu {

enum class AggregateMode : int { kSum = 0, kMean = 1, kWeighted = 2 };

void CsrAggregateForward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                         const int32_t* indices, const float* edge_weight, AggregateMode mode,
                         const float* x, int64_t dim, float* out);

void CsrAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                          const int32_t* indices, const float* edge_weight, AggregateMode mode,
                          const float* grad_out, int64_t dim, float* grad_x);

// GCN symmetric normalisation with self-loops folded in by the caller: for edge e = (d, s),
// w_e = 1 / sqrt((in_deg(d) + 1) * (out_deg_in_block(s) + 1)), where degrees are counted within the
// block. Writes nnz weights; also writes self_weight[d] = 1 / (in_deg(d) + 1) for the self term.
// CPU: allocates num_src degree counters (a once-per-batch preparation step, not a hot loop).
void GcnEdgeWeights(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                    const int32_t* indices, float* edge_weight, float* self_weight);

}  // namespace skiff::cpu
