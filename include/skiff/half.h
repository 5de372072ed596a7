// IEEE 754 half precision <-> float conversion (round to nearest even; Inf and NaN kept), for
// float16 feature files and .npy arrays.
//
// HalfToFloatRow widens a run of values at once: with the CPU's F16C instructions where it has them
// (chosen at run time; the build targets plain x86-64), else one value at a time. Both give
// HalfToFloat's result for every value but signalling NaNs, which F16C returns quietened (a NaN
// either way). Out of core, every float16 feature row a pass reads goes through it, so it runs
// at the rate rows arrive from the disk rather than bounding the gather (docs/pipeline.md).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace skiff {

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
void HalfToFloatRow(const uint16_t* src, float* dst, size_t n);

}  // namespace skiff
