// Row gather / scatter-add.
//   GatherRows:     dst[i,:] = src[idx[i],:]            for i in [0, n)   (dst n x dim,
//   overwritten) ScatterAddRows: dst[idx[i],:] += src[i,:]           (accumulates; duplicate idx
//   allowed) ScatterRows:    dst[idx[i],:]  = src[i,:]           (overwrites; idx distinct)
// idx values must lie in the source/destination row range (asserted in debug builds).
#pragma once
#include <cstdint>

namespace skiff::cpu {
void GatherRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst);
void ScatterAddRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst);
void ScatterRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst);
}  // namespace skiff::cpu
