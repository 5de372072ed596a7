// CSR aggregation (SpMM over a sampled block): out[d] = reduce_{e in row d} w_e * x[indices[e]].
//   kSum:      w_e = 1
//   kMean:     w_e = 1 / deg(d)   (rows of degree 0 produce zeros)
//   kWeighted: w_e = edge_weight[e] (e.g. GCN's 1/sqrt(deg_d * deg_s), see GcnEdgeWeights)
// Shapes: x is num_src x dim, out is num_dst x dim (overwritten), indptr num_dst+1, indices nnz,
// edge_weight nnz (only read for kWeighted; may be null otherwise).
// Backward: grad_x (num_src x dim) is *overwritten* with sum over edges e=(d,s) of w_e *
// grad_out[d].
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

// GCN symmetric normalisation with self-loops folded in by the caller. Writes nnz edge weights
// and num_dst self weights. Two degree sources:
//   src_degree == nullptr  degrees counted within the block: for edge e = (d, s),
//                          w_e = 1 / sqrt((in_deg(d) + 1) * (out_deg_in_block(s) + 1)),
//                          self_weight[d] = 1 / (in_deg(d) + 1).
//   src_degree != nullptr  whole-graph degrees (size num_src; destinations are a prefix of the
//                          sources, so src_degree[d] is also d's degree), as in full-graph GCN:
//                          w_e = (deg(d) / k_d) / sqrt((deg(d) + 1) * (deg(s) + 1)) where k_d is
//                          the number of sampled edges of row d, self_weight[d] = 1 / (deg(d) + 1).
//                          The factor deg(d)/k_d makes the sampled sum an unbiased estimate of the
//                          full one; with every neighbour taken it is 1 and the result is exactly
//                          Kipf & Welling's D^-1/2 (A + I) D^-1/2. Requires k_d <= deg(d).
// CPU: allocates num_src degree counters in the first form (a once-per-batch preparation step).
void GcnEdgeWeights(int64_t num_dst, int64_t num_src, const int64_t* indptr, const int32_t* indices,
                    const int64_t* src_degree, float* edge_weight, float* self_weight);

}  // namespace skiff::cpu
