// CheckFeatureValues: the converters' check of feature values before they are stored. A feature
// must be a finite number (NaN or Inf would reach training, where ReLU and max turn NaN into 0
// or the loss into NaN: garbage either way) and, stored as float16, within its range (|x| <=
// 65504; larger values would become Inf).
//
// Thread safety: a plain function.
#pragma once

#include <cstdint>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

// Checks rows [first_node, first_node + rows) (row-major, `dim` floats each) for storage as
// `dtype`; InvalidArgument naming `source`, the node, the column and the value otherwise.
Status CheckFeatureValues(const float* values, int64_t rows, int64_t dim, int64_t first_node,
                          format::DType dtype, const std::string& source);

}  // namespace skiff::convert
