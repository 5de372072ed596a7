#include "kernels/cpu/csr_aggregate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/multiversion.h"
#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {
namespace {

// Weight of edge `edge` in row `row` for `mode` (1 / deg for kMean, so deg > 0 here).
inline float EdgeWeight(AggregateMode mode, const float* edge_weight, int64_t edge,
                        int64_t degree) {
  switch (mode) {
    case AggregateMode::kSum:
      return 1.0f;
    case AggregateMode::kMean:
      return 1.0f / static_cast<float>(degree);
    case AggregateMode::kWeighted:
      return edge_weight[edge];
  }
  return 0.0f;
}

// Rows per parallel chunk: enough edge work per chunk to amortise starting a thread.
int64_t RowsPerChunk(int64_t num_dst, int64_t nnz, int64_t dim) {
  const int64_t work_per_row =
      std::max<int64_t>(1, (nnz / std::max<int64_t>(1, num_dst) + 1) * dim);
  return std::max<int64_t>(1, (int64_t{1} << 16) / work_per_row);
}

// How many edges ahead AggregateRows prefetches source rows.
constexpr int64_t kPrefetchEdges = 4;

// out[row] = sum_e w_e x[src_e] for rows [row_begin, row_end), accumulated in float in CSR order
// (an axpy per edge over the row, which stays in L1: the loop that vectorises).
SKIFF_CPU_MULTIVERSION
void AggregateRows(int64_t row_begin, int64_t row_end, int64_t num_src, const int64_t* indptr,
                   const int32_t* indices, const float* edge_weight, AggregateMode mode,
                   const float* x, int64_t dim, float* out) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t edge_begin = indptr[row], edge_end = indptr[row + 1];
    const int64_t degree = edge_end - edge_begin;
    float* __restrict out_row = out + row * dim;
    std::fill_n(out_row, dim, 0.0f);
    for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
      const int64_t src = indices[edge];
      SKIFF_CHECK(src >= 0 && src < num_src);
      // Sources are scattered over x: start fetching a row a few edges ahead of its use.
      if (edge + kPrefetchEdges < indptr[row_end]) {
        const float* ahead = x + static_cast<int64_t>(indices[edge + kPrefetchEdges]) * dim;
        for (int64_t col = 0; col < dim; col += 16) __builtin_prefetch(ahead + col);
      }
      const float w = EdgeWeight(mode, edge_weight, edge, degree);
      const float* __restrict x_row = x + src * dim;
      for (int64_t col = 0; col < dim; ++col) out_row[col] += w * x_row[col];
    }
  }
}

// grad_x[:, cols] = sum over edges (d, s) of w_e grad_out[d, cols], for one column range, edges in
// CSR order.
SKIFF_CPU_MULTIVERSION
void ScatterColumns(int64_t col_begin, int64_t col_end, int64_t num_dst, int64_t num_src,
                    const int64_t* indptr, const int32_t* indices, const float* edge_weight,
                    AggregateMode mode, const float* grad_out, int64_t dim, float* grad_x) {
  const int64_t width = col_end - col_begin;
  for (int64_t src = 0; src < num_src; ++src) {
    std::fill_n(grad_x + src * dim + col_begin, width, 0.0f);
  }
  for (int64_t row = 0; row < num_dst; ++row) {
    const int64_t edge_begin = indptr[row], edge_end = indptr[row + 1];
    const int64_t degree = edge_end - edge_begin;
    const float* __restrict g_row = grad_out + row * dim + col_begin;
    for (int64_t edge = edge_begin; edge < edge_end; ++edge) {
      const int64_t src = indices[edge];
      SKIFF_CHECK(src >= 0 && src < num_src);
      const float w = EdgeWeight(mode, edge_weight, edge, degree);
      float* __restrict gx_row = grad_x + src * dim + col_begin;
      for (int64_t col = 0; col < width; ++col) gx_row[col] += w * g_row[col];
    }
  }
}

}  // namespace

void CsrAggregateForward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                         const int32_t* indices, const float* edge_weight, AggregateMode mode,
                         const float* x, int64_t dim, float* out) {
  SKIFF_CHECK(num_dst >= 0 && num_src >= 0 && dim >= 0);
  SKIFF_CHECK(mode != AggregateMode::kWeighted || edge_weight != nullptr || indptr[num_dst] == 0);
  const int64_t nnz = indptr[num_dst];
  ParallelFor(num_dst, RowsPerChunk(num_dst, nnz, dim), [&](int64_t row_begin, int64_t row_end) {
    AggregateRows(row_begin, row_end, num_src, indptr, indices, edge_weight, mode, x, dim, out);
  });
}

void CsrAggregateBackward(int64_t num_dst, int64_t num_src, const int64_t* indptr,
                          const int32_t* indices, const float* edge_weight, AggregateMode mode,
                          const float* grad_out, int64_t dim, float* grad_x) {
  SKIFF_CHECK(num_dst >= 0 && num_src >= 0 && dim >= 0);
  SKIFF_CHECK(mode != AggregateMode::kWeighted || edge_weight != nullptr || indptr[num_dst] == 0);
  // Scatter along edges. Threads own disjoint column ranges of grad_x, so there are no races and
  // every element sums its edges in CSR order: the result does not depend on the thread count.
  ParallelFor(dim, 16, [&](int64_t col_begin, int64_t col_end) {
    ScatterColumns(col_begin, col_end, num_dst, num_src, indptr, indices, edge_weight, mode,
                   grad_out, dim, grad_x);
  });
}

void GcnEdgeWeights(int64_t num_dst, int64_t num_src, const int64_t* indptr, const int32_t* indices,
                    const int64_t* src_degree, float* edge_weight, float* self_weight) {
  SKIFF_CHECK(num_dst >= 0 && num_src >= 0);
  const int64_t nnz = indptr[num_dst];
  if (src_degree != nullptr) {
    SKIFF_CHECK_MSG(num_dst <= num_src, "destinations must be a prefix of the sources");
    for (int64_t row = 0; row < num_dst; ++row) {
      const int64_t sampled = indptr[row + 1] - indptr[row];
      const double degree = static_cast<double>(src_degree[row]);
      SKIFF_CHECK_MSG(sampled <= src_degree[row], "a row has more sampled edges than its degree");
      self_weight[row] = static_cast<float>(1.0 / (degree + 1.0));
      const double scale = sampled > 0 ? degree / static_cast<double>(sampled) : 0.0;
      for (int64_t edge = indptr[row]; edge < indptr[row + 1]; ++edge) {
        SKIFF_CHECK(indices[edge] >= 0 && indices[edge] < num_src);
        const double neighbour_degree = static_cast<double>(src_degree[indices[edge]]);
        edge_weight[edge] =
            static_cast<float>(scale / std::sqrt((degree + 1.0) * (neighbour_degree + 1.0)));
      }
    }
    return;
  }
  std::vector<int32_t> out_degree(static_cast<size_t>(num_src), 0);
  for (int64_t edge = 0; edge < nnz; ++edge) {
    SKIFF_CHECK(indices[edge] >= 0 && indices[edge] < num_src);
    ++out_degree[static_cast<size_t>(indices[edge])];
  }
  for (int64_t row = 0; row < num_dst; ++row) {
    const double in_degree = static_cast<double>(indptr[row + 1] - indptr[row]);
    self_weight[row] = static_cast<float>(1.0 / (in_degree + 1.0));
    for (int64_t edge = indptr[row]; edge < indptr[row + 1]; ++edge) {
      const double src_degree_in_block = out_degree[static_cast<size_t>(indices[edge])];
      edge_weight[edge] =
          static_cast<float>(1.0 / std::sqrt((in_degree + 1.0) * (src_degree_in_block + 1.0)));
    }
  }
}

}  // namespace skiff::cpu
