// Dense GEMM (row-major): C = alpha * op(A) * op(B) + beta * C, through CBLAS (OpenBLAS).
//   op(A) is m x k (A is m x k, or k x m when trans_a); op(B) is k x n; C is m x n.
//   lda/ldb/ldc are row strides (elements). m, n or k may be 0 (then C = beta * C, or untouched
//   when m or n is 0). Thread-safe.
// Threading: products of at least 2^22 multiply-adds are split across NumThreads() threads, each
// making a single-threaded BLAS call: by rows of C when m allows, else by the inner dimension k
// (partial products added to C in slice order), else by columns. Results are deterministic for a
// given thread count (a k split changes the summation order, so they can differ in the last bits
// between thread counts).
#pragma once
#include <cstdint>

namespace skiff::cpu {
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
}  // namespace skiff::cpu
