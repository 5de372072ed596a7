#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;

namespace {
// C = alpha op(A) op(B) + beta C with plain loops in double.
std::vector<float> NaiveGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                             const std::vector<float>& a, const std::vector<float>& b, float beta,
                             std::vector<float> c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = ta ? a[p * m + i] : a[i * k + p];
        const float bv = tb ? b[j * k + p] : b[p * n + j];
        s += static_cast<double>(av) * bv;
      }
      c[i * n + j] = static_cast<float>(alpha * s + beta * c[i * n + j]);
    }
  }
  return c;
}
}  // namespace

TEST_CASE("kernels: Gemm matches plain loops for every transpose and odd shapes") {
  std::mt19937_64 rng(1);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (auto [m, n, k] :
           {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 13, 5}, {33, 9, 70}, {1, 17, 3}}) {
        auto a = testing::RandomVector(m * k, rng);
        auto b = testing::RandomVector(k * n, rng);
        auto c = testing::RandomVector(m * n, rng);
        auto expected = NaiveGemm(ta, tb, m, n, k, 0.5f, a, b, 2.0f, c);
        cpu::Gemm(ta, tb, m, n, k, 0.5f, a.data(), ta ? m : k, b.data(), tb ? k : n, 2.0f, c.data(),
                  n);
        for (size_t i = 0; i < c.size(); ++i)
          CHECK(c[i] == doctest::Approx(expected[i]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("kernels: Gemm with k == 0 scales C, with m == 0 does nothing") {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  cpu::Gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 3.0f, c.data(), 2);
  CHECK(c == std::vector<float>{3.0f, 6.0f, 9.0f, 12.0f});
  cpu::Gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2);
  CHECK(c == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
  cpu::Gemm(false, false, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, nullptr, 2);
}

TEST_CASE("kernels: Gemm honours row strides larger than the width") {
  // A is a 2x2 window of a 2x4 matrix, C a 2x2 window of a 2x3 one.
  std::vector<float> a = {1, 2, 9, 9, 3, 4, 9, 9};
  std::vector<float> b = {1, 0, 0, 1};
  std::vector<float> c(6, -1.0f);
  cpu::Gemm(false, false, 2, 2, 2, 1.0f, a.data(), 4, b.data(), 2, 0.0f, c.data(), 3);
  CHECK(c == std::vector<float>{1, 2, -1, 3, 4, -1});
}

TEST_CASE("kernels: threaded Gemm splits (rows, inner dimension, columns) match plain loops") {
  const int saved_threads = cpu::NumThreads();
  cpu::SetNumThreads(3);
  std::mt19937_64 rng(2);
  // Each shape has enough work to be split, and selects one split: m large -> rows; m small and
  // k large -> inner dimension (partial products); both small -> columns.
  for (auto [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{400, 48, 300}, {40, 64, 2000}, {40, 1800, 100}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CAPTURE(m);
        CAPTURE(ta);
        CAPTURE(tb);
        // Row strides wider than the matrices, so slice offsets must honour them.
        const int64_t pad = 3;
        const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
        const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
        const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
        auto a_dense = testing::RandomVector(a_rows * a_cols, rng);
        auto b_dense = testing::RandomVector(b_rows * b_cols, rng);
        auto c_dense = testing::RandomVector(m * n, rng);
        auto expected = NaiveGemm(ta, tb, m, n, k, 0.5f, a_dense, b_dense, 2.0f, c_dense);
        std::vector<float> a(a_rows * lda, 9.0f), b(b_rows * ldb, 9.0f), c(m * ldc, 7.0f);
        for (int64_t r = 0; r < a_rows; ++r)
          std::copy_n(a_dense.begin() + r * a_cols, a_cols, a.begin() + r * lda);
        for (int64_t r = 0; r < b_rows; ++r)
          std::copy_n(b_dense.begin() + r * b_cols, b_cols, b.begin() + r * ldb);
        for (int64_t r = 0; r < m; ++r)
          std::copy_n(c_dense.begin() + r * n, n, c.begin() + r * ldc);
        cpu::Gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t col = 0; col < n; ++col) {
            REQUIRE(c[r * ldc + col] == doctest::Approx(expected[r * n + col]).epsilon(1e-4));
          }
          for (int64_t col = n; col < ldc; ++col) REQUIRE(c[r * ldc + col] == 7.0f);  // padding
        }
      }
    }
  }
  cpu::SetNumThreads(saved_threads);
}
