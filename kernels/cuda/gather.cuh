// CUDA row gather / scatter-add: the GPU mirror of kernels/cpu/gather.h (same names, argument
// order and semantics, plus a trailing stream).
//
// GatherRows reads `src` from device memory or, zero-copy, from pinned host memory that is mapped
// into the device's address space (PinnedBuffer in pinned_buffer.cuh, or any cudaHostAlloc /
// cudaHostRegister'ed memory): each row is then read once over PCIe in 16-byte loads, so gathering
// a few thousand scattered feature rows needs no staging copy. `idx` and `dst` are device memory.
// ScatterAddRows accumulates with atomicAdd, so duplicate indices are allowed (and summation order
// varies in the last bits). ScatterRows overwrites (indices distinct; `src`, `idx`, `dst` device
// memory): it puts uploaded rows into their slots of a device row cache.
//
// Errors: InvalidArgument for negative sizes or a `src` the device cannot address (pageable host
// memory); Internal from the CUDA runtime. Indices are trusted to be in range (as on the CPU).
// Thread safety: stateless; calls on different streams are independent.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda {

Status GatherRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                  cudaStream_t stream);
Status ScatterAddRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                      cudaStream_t stream);
Status ScatterRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                   cudaStream_t stream);

}  // namespace skiff::cuda
