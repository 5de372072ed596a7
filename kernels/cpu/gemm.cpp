#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

// OpenBLAS's extension, declared weak so a build against another CBLAS still links.
extern "C" void openblas_set_num_threads(int num_threads) __attribute__((weak));

namespace skiff::cpu {

namespace {

// One single-threaded BLAS call (OpenBLAS runs with one thread; Skiff's threads split the work).
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// Gemm splits large products across Skiff's own threads and calls BLAS single-threaded. An
// OpenBLAS thread pool would also spin (sched_yield) between calls, against the sampler and
// gather threads on the same cores: ~10% of a GraphSAGE training step on 2 cores.
bool MakeBlasSingleThreaded() {
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  return true;
}

// Below this many multiply-adds a GEMM runs on the calling thread: starting threads costs more.
constexpr int64_t kParallelMacs = int64_t{1} << 22;
// Smallest slice of the split dimension handed to a thread (keeps BLAS blocking efficient).
constexpr int64_t kMinSlice = 64;

// C = beta C for an empty inner dimension. BLAS implementations disagree on lda checks there, so C
// is scaled here (beta == 0 clears C even if it held NaNs, as BLAS does).
void ScaleOnly(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t row = 0; row < m; ++row) {
    float* c_row = c + row * ldc;
    for (int64_t col = 0; col < n; ++col) c_row[col] = beta == 0.0f ? 0.0f : beta * c_row[col];
  }
}

// The product split along the inner dimension over `threads` (weight gradients: K = rows of a
// batch): each slice forms a partial product, then the partials are added to C in slice order, so
// the result is fixed for a given thread count.
void GemmSplitInner(int threads, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc) {
  const int64_t slices = std::min<int64_t>(threads, k / kMinSlice);
  const int64_t per_slice = (k + slices - 1) / slices;
  std::vector<float> partial(static_cast<size_t>((slices - 1) * m * n));
  ParallelFor(slices, 1, [&](int64_t slice_begin, int64_t slice_end) {
    for (int64_t slice = slice_begin; slice < slice_end; ++slice) {
      const int64_t k0 = slice * per_slice, k1 = std::min(k, k0 + per_slice);
      const float* a_slice = trans_a ? a + k0 * lda : a + k0;
      const float* b_slice = trans_b ? b + k0 : b + k0 * ldb;
      if (slice == 0) {
        Sgemm(trans_a, trans_b, m, n, k1 - k0, alpha, a_slice, lda, b_slice, ldb, beta, c, ldc);
      } else {
        Sgemm(trans_a, trans_b, m, n, k1 - k0, alpha, a_slice, lda, b_slice, ldb, 0.0f,
              partial.data() + (slice - 1) * m * n, n);
      }
    }
  });
  ParallelFor(m, 1, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      float* c_row = c + row * ldc;
      for (int64_t slice = 1; slice < slices; ++slice) {
        const float* p_row = partial.data() + ((slice - 1) * m + row) * n;
        for (int64_t col = 0; col < n; ++col) c_row[col] += p_row[col];
      }
    }
  });
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  static const bool blas_single_threaded = MakeBlasSingleThreaded();
  (void)blas_single_threaded;
  SKIFF_CHECK(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  SKIFF_CHECK(ldc >= n);
  if (k == 0) {
    ScaleOnly(m, n, beta, c, ldc);
    return;
  }
  SKIFF_CHECK(lda >= (trans_a ? m : k) && ldb >= (trans_b ? k : n));
  SKIFF_CHECK_MSG(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
                      ldb <= INT_MAX && ldc <= INT_MAX,
                  "GEMM dimension exceeds the 32-bit CBLAS interface");
  const int threads = NumThreads();
  const int64_t macs = m * n * k;
  if (threads <= 1 || macs < kParallelMacs) {
    Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Rows of C (op(A)'s rows) when there are enough: independent slices, no reduction.
  if (m >= threads * kMinSlice) {
    ParallelFor(m, kMinSlice, [&](int64_t begin, int64_t end) {
      const float* a_slice = trans_a ? a + begin : a + begin * lda;
      Sgemm(trans_a, trans_b, end - begin, n, k, alpha, a_slice, lda, b, ldb, beta, c + begin * ldc,
            ldc);
    });
    return;
  }
  // Otherwise the inner dimension when it is long.
  if (k >= threads * kMinSlice) {
    GemmSplitInner(threads, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Wide and short: columns of C.
  ParallelFor(n, kMinSlice, [&](int64_t begin, int64_t end) {
    const float* b_slice = trans_b ? b + begin * ldb : b + begin;
    Sgemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_slice, ldb, beta, c + begin, ldc);
  });
}

}  // namespace skiff::cpu
