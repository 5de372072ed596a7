// Helpers shared by the kernel and model tests: random blocks with awkward shapes and a central
// finite-difference gradient checker.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "skiff/sampler/minibatch.h"

namespace skiff::testing {

inline std::vector<float> RandomVector(int64_t n, std::mt19937_64& rng, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// A random bipartite block: num_dst rows, each with 0..max_degree distinct-or-repeated sources in
// [0, num_src); row 0 always has degree 0 when num_dst > 1 so empty rows are always covered, and
// the last row has max_degree edges (a skewed row).
inline sampler::Block RandomBlock(int64_t num_dst, int64_t num_src, int64_t max_degree,
                                  std::mt19937_64& rng) {
  sampler::Block block;
  block.num_dst = num_dst;
  block.num_src = num_src;
  block.indptr.push_back(0);
  std::uniform_int_distribution<int64_t> degree_dist(0, max_degree);
  std::uniform_int_distribution<int32_t> src_dist(0, static_cast<int32_t>(num_src - 1));
  for (int64_t row = 0; row < num_dst; ++row) {
    int64_t degree = degree_dist(rng);
    if (row == 0 && num_dst > 1) degree = 0;
    if (row == num_dst - 1 && num_dst > 1) degree = max_degree;
    for (int64_t e = 0; e < degree; ++e) block.indices.push_back(src_dist(rng));
    block.indptr.push_back(static_cast<int64_t>(block.indices.size()));
  }
  return block;
}

// sum_i a[i] * b[i] in double: the scalar loss used to check a backward against its forward.
inline double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Checks analytic[i] == d loss / d values[i] by central differences for every i (or every
// `stride`-th i). `loss` reads `values`.
inline void CheckGradient(const std::string& what, float* values, size_t size,
                          const float* analytic, const std::function<double()>& loss,
                          double eps = 1e-2, double atol = 1e-3, double rtol = 1e-2,
                          size_t stride = 1) {
  int failures = 0;
  for (size_t i = 0; i < size; i += stride) {
    const float saved = values[i];
    values[i] = static_cast<float>(saved + eps);
    const double plus = loss();
    values[i] = static_cast<float>(saved - eps);
    const double minus = loss();
    values[i] = saved;
    const double numeric = (plus - minus) / (2.0 * eps);
    const double a = analytic[i];
    const bool ok = std::abs(a - numeric) <= atol + rtol * std::max(std::abs(a), std::abs(numeric));
    if (!ok && failures++ < 5) {
      FAIL_CHECK(what << "[" << i << "]: analytic " << a << " vs numeric " << numeric);
    }
  }
  CHECK_MESSAGE(failures == 0, what << ": " << failures << " gradient mismatches");
}

inline void CheckGradient(const std::string& what, std::vector<float>& values,
                          const std::vector<float>& analytic, const std::function<double()>& loss,
                          double eps = 1e-2, double atol = 1e-3, double rtol = 1e-2,
                          size_t stride = 1) {
  REQUIRE(values.size() == analytic.size());
  CheckGradient(what, values.data(), values.size(), analytic.data(), loss, eps, atol, rtol, stride);
}

}  // namespace skiff::testing
