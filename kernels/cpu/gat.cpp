#include "kernels/cpu/gat.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {
namespace {

inline float LeakyRelu(float z, float negative_slope) { return z > 0.0f ? z : negative_slope * z; }

int64_t RowsPerChunk(int64_t rows, int64_t work_per_row) {
  return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, work_per_row));
}

}  // namespace

void AttentionDot(int64_t n, int64_t heads, int64_t dim, const float* feat, const float* attn,
                  float* el) {
  SKIFF_CHECK(n >= 0 && heads >= 0 && dim >= 0);
  ParallelFor(n, RowsPerChunk(n, heads * dim), [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      for (int64_t head = 0; head < heads; ++head) {
        const float* f = feat + (row * heads + head) * dim;
        const float* a = attn + head * dim;
        double sum = 0.0;
        for (int64_t k = 0; k < dim; ++k) sum += static_cast<double>(f[k]) * a[k];
        el[row * heads + head] = static_cast<float>(sum);
      }
    }
  });
}

void AttentionDotBackward(int64_t n, int64_t heads, int64_t dim, const float* feat,
                          const float* attn, const float* grad_el, float* grad_feat,
                          float* grad_attn) {
  SKIFF_CHECK(n >= 0 && heads >= 0 && dim >= 0);
  // grad_feat: independent rows.
  ParallelFor(n, RowsPerChunk(n, heads * dim), [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      for (int64_t head = 0; head < heads; ++head) {
        const float g = grad_el[row * heads + head];
        const float* a = attn + head * dim;
        float* gf = grad_feat + (row * heads + head) * dim;
        for (int64_t k = 0; k < dim; ++k) gf[k] += g * a[k];
      }
    }
  });
  // grad_attn: a reduction over rows; threads own disjoint heads, and each (head, column tile)
  // sums all rows in order in double precision.
  ParallelFor(heads, 1, [&](int64_t head_begin, int64_t head_end) {
    double acc[kAccumTile];
    for (int64_t head = head_begin; head < head_end; ++head) {
      for (int64_t col0 = 0; col0 < dim; col0 += kAccumTile) {
        const int64_t width = std::min(kAccumTile, dim - col0);
        std::fill(acc, acc + width, 0.0);
        for (int64_t row = 0; row < n; ++row) {
          const double g = grad_el[row * heads + head];
          const float* f = feat + (row * heads + head) * dim + col0;
          for (int64_t col = 0; col < width; ++col) acc[col] += g * f[col];
        }
        float* ga = grad_attn + head * dim + col0;
        for (int64_t col = 0; col < width; ++col) ga[col] += static_cast<float>(acc[col]);
      }
    }
  });
}

void GatEdgeSoftmaxForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                           int64_t heads, const float* el, const float* er, float negative_slope,
                           float* alpha) {
  SKIFF_CHECK(num_dst >= 0 && heads >= 0);
  const int64_t nnz = indptr[num_dst];
  ParallelFor(
      num_dst, RowsPerChunk(num_dst, (nnz / std::max<int64_t>(1, num_dst) + 1) * heads * 4),
      [&](int64_t row_begin, int64_t row_end) {
        for (int64_t row = row_begin; row < row_end; ++row) {
          const int64_t edge_begin = indptr[row], edge_end = indptr[row + 1];
          for (int64_t head = 0; head < heads; ++head) {
            const float er_value = er[row * heads + head];
            float max_score = -std::numeric_limits<float>::infinity();
            for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
              const float score =
                  LeakyRelu(el[static_cast<int64_t>(indices[edge]) * heads + head] + er_value,
                            negative_slope);
              max_score = std::max(max_score, score);
            }
            double sum = 0.0;
            for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
              const float score =
                  LeakyRelu(el[static_cast<int64_t>(indices[edge]) * heads + head] + er_value,
                            negative_slope);
              const double e = std::exp(static_cast<double>(score) - max_score);
              alpha[edge * heads + head] = static_cast<float>(e);
              sum += e;
            }
            for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
              alpha[edge * heads + head] = static_cast<float>(alpha[edge * heads + head] / sum);
            }
          }
        }
      });
}

void GatEdgeSoftmaxBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                            const int32_t* indices, int64_t heads, const float* el, const float* er,
                            float negative_slope, const float* alpha, const float* grad_alpha,
                            float* grad_el, float* grad_er) {
  SKIFF_CHECK(num_dst >= 0 && num_src >= 0 && heads >= 0);
  // Softmax: d score_e = alpha_e * (g_e - sum_e' alpha_e' g_e'); LeakyReLU: times 1 or slope.
  // grad_el is a scatter over sources; threads own disjoint heads, so there are no races and the
  // summation order is fixed.
  ParallelFor(heads, 1, [&](int64_t head_begin, int64_t head_end) {
    for (int64_t src = 0; src < num_src; ++src) {
      for (int64_t head = head_begin; head < head_end; ++head) grad_el[src * heads + head] = 0.0f;
    }
    for (int64_t row = 0; row < num_dst; ++row) {
      const int64_t edge_begin = indptr[row], edge_end = indptr[row + 1];
      for (int64_t head = head_begin; head < head_end; ++head) {
        double dot = 0.0;
        for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
          dot += static_cast<double>(alpha[edge * heads + head]) * grad_alpha[edge * heads + head];
        }
        const float er_value = er[row * heads + head];
        double grad_er_sum = 0.0;
        for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
          const int64_t src = indices[edge];
          const double grad_score =
              alpha[edge * heads + head] * (grad_alpha[edge * heads + head] - dot);
          const float z = el[src * heads + head] + er_value;
          const double grad_z = z > 0.0f ? grad_score : grad_score * negative_slope;
          grad_el[src * heads + head] += static_cast<float>(grad_z);
          grad_er_sum += grad_z;
        }
        grad_er[row * heads + head] = static_cast<float>(grad_er_sum);
      }
    }
  });
}

void GatAggregateForward(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                         int64_t heads, int64_t dim, const float* alpha, const float* feat,
                         float* out) {
  SKIFF_CHECK(num_dst >= 0 && heads >= 0 && dim >= 0);
  const int64_t nnz = indptr[num_dst];
  const int64_t width_total = heads * dim;
  ParallelFor(
      num_dst, RowsPerChunk(num_dst, (nnz / std::max<int64_t>(1, num_dst) + 1) * width_total),
      [&](int64_t row_begin, int64_t row_end) {
        double acc[kAccumTile];
        for (int64_t row = row_begin; row < row_end; ++row) {
          const int64_t edge_begin = indptr[row], edge_end = indptr[row + 1];
          for (int64_t head = 0; head < heads; ++head) {
            for (int64_t col0 = 0; col0 < dim; col0 += kAccumTile) {
              const int64_t width = std::min(kAccumTile, dim - col0);
              std::fill(acc, acc + width, 0.0);
              for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
                const double a = alpha[edge * heads + head];
                const float* f =
                    feat + (static_cast<int64_t>(indices[edge]) * heads + head) * dim + col0;
                for (int64_t col = 0; col < width; ++col) acc[col] += a * f[col];
              }
              float* o = out + (row * heads + head) * dim + col0;
              for (int64_t col = 0; col < width; ++col) o[col] = static_cast<float>(acc[col]);
            }
          }
        }
      });
}

void GatAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                          const int32_t* indices, int64_t heads, int64_t dim, const float* alpha,
                          const float* feat, const float* grad_out, float* grad_feat,
                          float* grad_alpha) {
  SKIFF_CHECK(num_dst >= 0 && num_src >= 0 && heads >= 0 && dim >= 0);
  const int64_t nnz = indptr[num_dst];
  const int64_t width_total = heads * dim;
  // grad_alpha[e,h] = <grad_out[d,h,:], feat[s,h,:]>: independent per row.
  ParallelFor(num_dst,
              RowsPerChunk(num_dst, (nnz / std::max<int64_t>(1, num_dst) + 1) * width_total),
              [&](int64_t row_begin, int64_t row_end) {
                for (int64_t row = row_begin; row < row_end; ++row) {
                  for (int64_t edge = indptr[row]; edge < indptr[row + 1]; ++edge) {
                    const int64_t src = indices[edge];
                    for (int64_t head = 0; head < heads; ++head) {
                      const float* g = grad_out + (row * heads + head) * dim;
                      const float* f = feat + (src * heads + head) * dim;
                      double dot = 0.0;
                      for (int64_t k = 0; k < dim; ++k) dot += static_cast<double>(g[k]) * f[k];
                      grad_alpha[edge * heads + head] = static_cast<float>(dot);
                    }
                  }
                }
              });
  // grad_feat[s,h,:] = sum_e alpha[e,h] grad_out[d,h,:]: a scatter; threads own disjoint column
  // ranges of the (heads * dim)-wide rows, so the result is independent of the thread count.
  ParallelFor(width_total, 16, [&](int64_t col_begin, int64_t col_end) {
    const int64_t width = col_end - col_begin;
    for (int64_t src = 0; src < num_src; ++src) {
      std::fill_n(grad_feat + src * width_total + col_begin, width, 0.0f);
    }
    for (int64_t row = 0; row < num_dst; ++row) {
      const float* g_row = grad_out + row * width_total;
      for (int64_t edge = indptr[row]; edge < indptr[row + 1]; ++edge) {
        float* gf_row = grad_feat + static_cast<int64_t>(indices[edge]) * width_total;
        for (int64_t head = col_begin / dim; head * dim < col_end; ++head) {
          const float a = alpha[edge * heads + head];
          const int64_t head_col_end = std::min(col_end, (head + 1) * dim);
          for (int64_t col = std::max(col_begin, head * dim); col < head_col_end; ++col) {
            gf_row[col] += a * g_row[col];
          }
        }
      }
    }
  });
}

}  // namespace skiff::cpu
