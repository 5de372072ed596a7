#include "kernels/cpu/gather.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {

namespace {

// dst[d(i),:] = src[s(i),:] for i in [0, n), where the indices name the source rows (gather) or
// the destination rows (scatter) and the other side is i.
template <bool kScatter>
void CopyRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst) {
  SKIFF_CHECK(dim >= 0 && n >= 0);
  if (dim == 0) return;
  const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / dim);
  ParallelFor(n, rows_per_chunk, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      SKIFF_CHECK(idx[row] >= 0);
      const int64_t from = kScatter ? row : idx[row], to = kScatter ? idx[row] : row;
      std::memcpy(dst + to * dim, src + from * dim, static_cast<size_t>(dim) * sizeof(float));
    }
  });
}

}  // namespace

void GatherRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst) {
  CopyRows<false>(src, dim, idx, n, dst);
}

void ScatterAddRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst) {
  SKIFF_CHECK(dim >= 0 && n >= 0);
  // Duplicate indices are allowed, so threads own disjoint column ranges rather than rows; each
  // element then adds its contributions in index order whatever the thread count.
  ParallelFor(dim, 16, [&](int64_t col_begin, int64_t col_end) {
    for (int64_t row = 0; row < n; ++row) {
      SKIFF_CHECK(idx[row] >= 0);
      const float* s = src + row * dim;
      float* d = dst + idx[row] * dim;
      for (int64_t col = col_begin; col < col_end; ++col) d[col] += s[col];
    }
  });
}

void ScatterRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst) {
  CopyRows<true>(src, dim, idx, n, dst);
}

}  // namespace skiff::cpu
