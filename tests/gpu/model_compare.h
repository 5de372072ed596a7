// Comparisons of a CUDA model's outputs and parameters with a reference model's, shared by the GPU
// model tests: fp32 cuBLAS and atomics reorder sums, so values agree within a tolerance relative
// to the largest magnitude, not bit for bit.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "skiff/model/model.h"

namespace skiff::gpu_testing {

inline constexpr float kModelRelTolerance = 1e-4f;

// max |a - b| <= kModelRelTolerance * max(1, max |b|) over n values.
inline void CheckClose(const std::vector<float>& a, const float* b, size_t n,
                       const std::string& what) {
  REQUIRE(a.size() == n);
  float max_ref = 1.0f, max_diff = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    max_ref = std::max(max_ref, std::fabs(b[i]));
    max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
  }
  INFO(what << ": max diff " << max_diff << " vs max magnitude " << max_ref);
  CHECK(max_diff <= kModelRelTolerance * max_ref);
}

// Every parameter of `a` close to the same parameter of `b` (the reference).
inline void CheckParametersClose(model::Model& a, model::Model& b, const std::string& what) {
  std::vector<model::Parameter> pa = a.Parameters(), pb = b.Parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    std::vector<float> values(pa[i].data, pa[i].data + pa[i].size());
    CheckClose(values, pb[i].data, static_cast<size_t>(pb[i].size()), what + " " + pa[i].name);
  }
}

}  // namespace skiff::gpu_testing
