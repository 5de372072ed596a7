#include "skiff/convert/feature_values.h"

#include <cmath>
#include <cstdio>

namespace skiff::convert {

Status CheckFeatureValues(const float* values, int64_t rows, int64_t dim, int64_t first_node,
                          format::DType dtype, const std::string& source) {
  constexpr float kHalfMax = 65504.0f;
  const bool half = dtype == format::DType::kFloat16;
  for (int64_t i = 0; i < rows * dim; ++i) {
    const float x = values[i];
    if (std::isfinite(x) && (!half || std::fabs(x) <= kHalfMax)) continue;
    char value[32];
    std::snprintf(value, sizeof(value), "%g", static_cast<double>(x));
    const std::string where = source + ": the feature of node " +
                              std::to_string(first_node + i / dim) + ", column " +
                              std::to_string(i % dim) + ", is " + value;
    if (!std::isfinite(x)) {
      return Status::InvalidArgument(where +
                                     ": features must be finite numbers (replace or drop "
                                     "the missing and infinite values before converting)");
    }
    return Status::InvalidArgument(where +
                                   ", outside float16's range (|x| <= 65504): convert with "
                                   "--feature-dtype float32, or scale the features");
  }
  return Status::Ok();
}

}  // namespace skiff::convert
