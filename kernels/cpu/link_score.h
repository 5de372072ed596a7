// Link-prediction scores and losses over the rows of one embedding matrix.
//
// `emb` is rows x dim (row-major); a pair (src[i], dst[i]) names two rows of it, and the same row
// may appear any number of times in src and dst (a node is the source of many edges, and a
// candidate of every positive). Indices must lie in [0, rows) (asserted).
//
//   PairScores:           scores[i] = sum_k emb[src[i],k] * r_k * emb[dst[i],k], r_k = rel[k] when
//                         rel is non-null (DistMult's diagonal relation), else 1 (dot product).
//   PairScoresBackward:   accumulates d(sum_i grad_scores[i] * scores[i]) into grad_emb (rows x
//   dim)
//                         and, when rel is non-null, into grad_rel (dim).
//   CrossScores:          scores[i*k+j] = sum_d emb[src[i],d] * r_d * emb[cand[j],d] (n x k): every
//                         source against the same k candidates, as one GEMM on gathered rows.
//   CrossScoresBackward:  accumulates as PairScoresBackward, for grad_scores of n x k.
//   CrossPairScores:      CrossScores' n x k scores, each computed alone as PairScores computes a
//                         pair (a double sum in column order): a score does not depend on the
//                         other rows of the call or its place among them, so equal candidates
//                         tie exactly whatever the call's shape (ranking; a GEMM's kernels may
//                         round a row by its place in the tile).
//   PairHadamard:         out[i,:] = emb[src[i],:] * emb[dst[i],:] (n x dim, overwritten).
//   PairHadamardBackward: accumulates d(sum grad_out * out) into grad_emb.
//   BceWithLogits:        returns sum_i [softplus(s_i) - target * s_i] (binary cross-entropy with
//                         logits, PyTorch's formula, exact for target 0 or 1 and any |s|); writes
//                         grad[i] = scale * (sigmoid(s_i) - target) when grad is non-null.
//   SoftmaxNegatives:     row i is [pos[i], neg[i*k .. i*k+k)]; returns sum_i (logsumexp(row_i) -
//                         pos[i]); writes grad_pos[i] = scale * (p_pos - 1) and grad_neg[i*k+j] =
//                         scale * p_j (softmax probabilities of the row) when non-null. k may be 0
//                         (the loss is then 0).
//
// Allocation: CrossScores and CrossScoresBackward gather rows into a per-thread scratch buffer
// ((n + k) x dim floats forward, twice that backward) that grows to the largest call on each
// calling thread and is kept; no other op allocates.
//
// Threading and determinism: scores run in parallel over pairs (each writes its own output; the
// dot product is accumulated in double, in column order), CrossScores through Gemm (split as
// gemm.h says). The backward ops scatter into rows that repeat, so they split the work among
// threads by columns of dim: every element of grad_emb adds its terms in pair order, and each
// grad_rel element sums its terms in double in pair order, whatever the thread count. The losses
// are serial, with double sums. Results are bit-identical for any thread count, except
// CrossScores' GEMMs (deterministic for a given thread count, see gemm.h).
//
// Thread safety: stateless apart from the per-thread scratch; calls from several threads are
// independent.
#pragma once
#include <cstdint>

namespace skiff::cpu {

void PairScores(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst, int64_t n,
                const float* rel, float* scores);
void PairScoresBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                        int64_t n, const float* rel, const float* grad_scores, float* grad_emb,
                        float* grad_rel);
void CrossScores(const float* emb, int64_t dim, const int32_t* src, int64_t n, const int32_t* cand,
                 int64_t k, const float* rel, float* scores);
void CrossPairScores(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                     const int32_t* cand, int64_t k, const float* rel, float* scores);
void CrossScoresBackward(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                         const int32_t* cand, int64_t k, const float* rel, const float* grad_scores,
                         float* grad_emb, float* grad_rel);
void PairHadamard(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst, int64_t n,
                  float* out);
void PairHadamardBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                          int64_t n, const float* grad_out, float* grad_emb);
double BceWithLogits(const float* scores, int64_t n, float target, float scale, float* grad);
double SoftmaxNegatives(const float* pos, const float* neg, int64_t n, int64_t k, float scale,
                        float* grad_pos, float* grad_neg);

}  // namespace skiff::cpu
