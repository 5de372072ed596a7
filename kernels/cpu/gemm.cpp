#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <climits>

#include "skiff/status.h"

namespace skiff::cpu {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  SKIFF_CHECK(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  SKIFF_CHECK(ldc >= n);
  if (k == 0) {
    // op(A) op(B) is an empty sum; BLAS implementations disagree on lda checks here, so scale C
    // directly (beta == 0 clears C even if it held NaNs, as BLAS does).
    for (int64_t row = 0; row < m; ++row) {
      float* c_row = c + row * ldc;
      for (int64_t col = 0; col < n; ++col) c_row[col] = beta == 0.0f ? 0.0f : beta * c_row[col];
    }
    return;
  }
  SKIFF_CHECK(lda >= (trans_a ? m : k) && ldb >= (trans_b ? k : n));
  SKIFF_CHECK_MSG(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
                      ldb <= INT_MAX && ldc <= INT_MAX,
                  "GEMM dimension exceeds the 32-bit CBLAS interface");
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

}  // namespace skiff::cpu
