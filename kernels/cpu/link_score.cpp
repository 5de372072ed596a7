#include "kernels/cpu/link_score.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {
namespace {

// Pairs (or rows) per thread chunk for the row-parallel ops: about 16K multiply-adds, so a
// thread is started only when it has real work.
int64_t RowsPerChunk(int64_t dim) { return std::max<int64_t>(1, (int64_t{1} << 14) / dim); }

// Columns per thread chunk for the column-split scatters.
constexpr int64_t kMinColumnsPerChunk = 16;

// The calling thread's scratch, grown to `size` floats (contents unspecified) and kept.
float* Scratch(int64_t size) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < size) {
    buffer = std::vector<float>();
    buffer.resize(static_cast<size_t>(size));
  }
  return buffer.data();
}

// out[i,:] = emb[idx[i],:] * (rel ? rel : 1) for i in [0, n).
void GatherScaled(const float* emb, int64_t dim, const int32_t* idx, int64_t n, const float* rel,
                  float* out) {
  ParallelFor(n, RowsPerChunk(dim), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      SKIFF_CHECK(idx[row] >= 0);
      const float* e = emb + static_cast<int64_t>(idx[row]) * dim;
      float* o = out + row * dim;
      if (rel != nullptr) {
        for (int64_t col = 0; col < dim; ++col) o[col] = e[col] * rel[col];
      } else {
        std::copy(e, e + dim, o);
      }
    }
  });
}

// Splits [0, dim) among threads by column ranges, then each range into tiles of kAccumTile
// columns; fn(tile_begin, tile_end) runs once per tile on the thread owning it.
template <typename Fn>
void ForColumnTiles(int64_t dim, Fn&& fn) {
  ParallelFor(dim, kMinColumnsPerChunk, [&](int64_t col_begin, int64_t col_end) {
    for (int64_t tile = col_begin; tile < col_end; tile += kAccumTile) {
      fn(tile, std::min(col_end, tile + kAccumTile));
    }
  });
}

}  // namespace

namespace {

// One pair's score: sum over columns, in order, in double.
float PairScore(const float* a, const float* b, int64_t dim, const float* rel) {
  double sum = 0.0;
  if (rel != nullptr) {
    for (int64_t col = 0; col < dim; ++col) sum += static_cast<double>(a[col]) * rel[col] * b[col];
  } else {
    for (int64_t col = 0; col < dim; ++col) sum += static_cast<double>(a[col]) * b[col];
  }
  return static_cast<float>(sum);
}

}  // namespace

void PairScores(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst, int64_t n,
                const float* rel, float* scores) {
  SKIFF_CHECK(dim >= 0 && n >= 0);
  ParallelFor(n, RowsPerChunk(std::max<int64_t>(dim, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair) {
      SKIFF_CHECK(src[pair] >= 0 && dst[pair] >= 0);
      scores[pair] = PairScore(emb + static_cast<int64_t>(src[pair]) * dim,
                               emb + static_cast<int64_t>(dst[pair]) * dim, dim, rel);
    }
  });
}

void CrossPairScores(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                     const int32_t* cand, int64_t k, const float* rel, float* scores) {
  SKIFF_CHECK(dim >= 0 && n >= 0 && k >= 0);
  ParallelFor(n * k, RowsPerChunk(std::max<int64_t>(dim, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t at = begin; at < end; ++at) {
      const int32_t s = src[at / k], c = cand[at % k];
      SKIFF_CHECK(s >= 0 && c >= 0);
      scores[at] = PairScore(emb + static_cast<int64_t>(s) * dim,
                             emb + static_cast<int64_t>(c) * dim, dim, rel);
    }
  });
}

void PairScoresBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                        int64_t n, const float* rel, const float* grad_scores, float* grad_emb,
                        float* grad_rel) {
  SKIFF_CHECK(dim >= 0 && n >= 0);
  if (n == 0) return;
  ForColumnTiles(dim, [&](int64_t tile_begin, int64_t tile_end) {
    double rel_sum[kAccumTile] = {};
    for (int64_t pair = 0; pair < n; ++pair) {
      SKIFF_CHECK(src[pair] >= 0 && dst[pair] >= 0);
      const float g = grad_scores[pair];
      const int64_t s = src[pair], d = dst[pair];
      const float* a = emb + s * dim;
      const float* b = emb + d * dim;
      // ga and gb are the same row for a pair (v, v): the two updates then both land on it.
      float* ga = grad_emb + s * dim;
      float* gb = grad_emb + d * dim;
      for (int64_t col = tile_begin; col < tile_end; ++col) {
        const float gr = rel != nullptr ? g * rel[col] : g;
        ga[col] += gr * b[col];
        gb[col] += gr * a[col];
      }
      if (rel != nullptr && grad_rel != nullptr) {
        for (int64_t col = tile_begin; col < tile_end; ++col)
          rel_sum[col - tile_begin] += static_cast<double>(g) * a[col] * b[col];
      }
    }
    if (rel != nullptr && grad_rel != nullptr) {
      for (int64_t col = tile_begin; col < tile_end; ++col)
        grad_rel[col] += static_cast<float>(rel_sum[col - tile_begin]);
    }
  });
}

void CrossScores(const float* emb, int64_t dim, const int32_t* src, int64_t n, const int32_t* cand,
                 int64_t k, const float* rel, float* scores) {
  SKIFF_CHECK(dim >= 0 && n >= 0 && k >= 0);
  if (n == 0 || k == 0) return;
  float* src_rows = Scratch((n + k) * dim);  // n x dim, scaled by the relation
  float* cand_rows = src_rows + n * dim;     // k x dim
  GatherScaled(emb, dim, src, n, rel, src_rows);
  GatherScaled(emb, dim, cand, k, nullptr, cand_rows);
  Gemm(false, true, n, k, dim, 1.0f, src_rows, dim, cand_rows, dim, 0.0f, scores, k);
}

void CrossScoresBackward(const float* emb, int64_t dim, const int32_t* src, int64_t n,
                         const int32_t* cand, int64_t k, const float* rel, const float* grad_scores,
                         float* grad_emb, float* grad_rel) {
  SKIFF_CHECK(dim >= 0 && n >= 0 && k >= 0);
  if (n == 0 || k == 0 || dim == 0) return;
  // With S the gathered source rows, R = diag(rel), C the candidate rows and G = grad_scores:
  // scores = S R C^T, so d S = (G C) R, d C = G^T (S R), d rel = column sums of S * (G C).
  float* src_rows = Scratch(2 * (n + k) * dim);  // S R, n x dim
  float* cand_rows = src_rows + n * dim;         // C, k x dim
  float* grad_src = cand_rows + k * dim;         // G C, n x dim
  float* grad_cand = grad_src + n * dim;         // G^T S R, k x dim
  GatherScaled(emb, dim, src, n, rel, src_rows);
  GatherScaled(emb, dim, cand, k, nullptr, cand_rows);
  Gemm(false, false, n, dim, k, 1.0f, grad_scores, k, cand_rows, dim, 0.0f, grad_src, dim);
  Gemm(true, false, k, dim, n, 1.0f, grad_scores, k, src_rows, dim, 0.0f, grad_cand, dim);
  ForColumnTiles(dim, [&](int64_t tile_begin, int64_t tile_end) {
    double rel_sum[kAccumTile] = {};
    for (int64_t row = 0; row < n; ++row) {
      const float* e = emb + static_cast<int64_t>(src[row]) * dim;
      const float* gs = grad_src + row * dim;
      float* out = grad_emb + static_cast<int64_t>(src[row]) * dim;
      if (rel != nullptr) {
        for (int64_t col = tile_begin; col < tile_end; ++col) {
          out[col] += gs[col] * rel[col];
          rel_sum[col - tile_begin] += static_cast<double>(e[col]) * gs[col];
        }
      } else {
        for (int64_t col = tile_begin; col < tile_end; ++col) out[col] += gs[col];
      }
    }
    for (int64_t row = 0; row < k; ++row) {
      const float* gc = grad_cand + row * dim;
      float* out = grad_emb + static_cast<int64_t>(cand[row]) * dim;
      for (int64_t col = tile_begin; col < tile_end; ++col) out[col] += gc[col];
    }
    if (rel != nullptr && grad_rel != nullptr) {
      for (int64_t col = tile_begin; col < tile_end; ++col)
        grad_rel[col] += static_cast<float>(rel_sum[col - tile_begin]);
    }
  });
}

void PairHadamard(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst, int64_t n,
                  float* out) {
  SKIFF_CHECK(dim >= 0 && n >= 0);
  if (dim == 0) return;
  ParallelFor(n, RowsPerChunk(dim), [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair) {
      SKIFF_CHECK(src[pair] >= 0 && dst[pair] >= 0);
      const float* a = emb + static_cast<int64_t>(src[pair]) * dim;
      const float* b = emb + static_cast<int64_t>(dst[pair]) * dim;
      float* o = out + pair * dim;
      for (int64_t col = 0; col < dim; ++col) o[col] = a[col] * b[col];
    }
  });
}

void PairHadamardBackward(const float* emb, int64_t dim, const int32_t* src, const int32_t* dst,
                          int64_t n, const float* grad_out, float* grad_emb) {
  SKIFF_CHECK(dim >= 0 && n >= 0);
  if (n == 0) return;
  ForColumnTiles(dim, [&](int64_t tile_begin, int64_t tile_end) {
    for (int64_t pair = 0; pair < n; ++pair) {
      SKIFF_CHECK(src[pair] >= 0 && dst[pair] >= 0);
      const int64_t s = src[pair], d = dst[pair];
      const float* a = emb + s * dim;
      const float* b = emb + d * dim;
      const float* g = grad_out + pair * dim;
      float* ga = grad_emb + s * dim;
      float* gb = grad_emb + d * dim;
      for (int64_t col = tile_begin; col < tile_end; ++col) {
        ga[col] += g[col] * b[col];
        gb[col] += g[col] * a[col];
      }
    }
  });
}

// Serial: n is a batch's pair count (at most a few million), and one pass keeps the loss sum in a
// fixed order. softplus(s) - t s = max(s, 0) - t s + log1p(exp(-|s|)) never overflows.
double BceWithLogits(const float* scores, int64_t n, float target, float scale, float* grad) {
  SKIFF_CHECK(n >= 0);
  double loss_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double s = scores[i];
    const double e = std::exp(-std::abs(s));  // in (0, 1]
    loss_sum += std::max(s, 0.0) - target * s + std::log1p(e);
    if (grad != nullptr) {
      const double sigmoid = s >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
      grad[i] = static_cast<float>(scale * (sigmoid - target));
    }
  }
  return loss_sum;
}

// Serial over rows, like SoftmaxCrossEntropy; the row maximum is subtracted before exp and the
// log-sum-exp is taken in double.
double SoftmaxNegatives(const float* pos, const float* neg, int64_t n, int64_t k, float scale,
                        float* grad_pos, float* grad_neg) {
  SKIFF_CHECK(n >= 0 && k >= 0);
  double loss_sum = 0.0;
  for (int64_t row = 0; row < n; ++row) {
    const float* negs = neg + row * k;
    double max_score = pos[row];
    for (int64_t j = 0; j < k; ++j) max_score = std::max<double>(max_score, negs[j]);
    double sum_exp = std::exp(pos[row] - max_score);
    for (int64_t j = 0; j < k; ++j) sum_exp += std::exp(negs[j] - max_score);
    const double log_sum_exp = max_score + std::log(sum_exp);
    loss_sum += log_sum_exp - pos[row];
    if (grad_pos != nullptr) {
      grad_pos[row] = static_cast<float>(scale * (std::exp(pos[row] - log_sum_exp) - 1.0));
    }
    if (grad_neg != nullptr) {
      float* g = grad_neg + row * k;
      for (int64_t j = 0; j < k; ++j)
        g[j] = static_cast<float>(scale * std::exp(negs[j] - log_sum_exp));
    }
  }
  return loss_sum;
}

}  // namespace skiff::cpu
