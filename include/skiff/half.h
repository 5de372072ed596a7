// IEEE 754 half precision <-> float conversion (round to nearest even; Inf and NaN kept), for
// float16 feature files and .npy arrays.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

namespace skiff {

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

}  // namespace skiff
