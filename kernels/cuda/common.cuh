// Helpers shared by the CUDA kernels: launch checking, grid sizing, warp reductions.
//
// Every entry point in kernels/cuda/ follows the same shape: check shapes on the host, pick a grid
// in a launcher, launch on the caller's stream, then `return CheckLaunch("<op>")`. Nothing here
// synchronises the stream; errors from an earlier asynchronous kernel surface at the next check
// (or at the caller's synchronisation) -- the CUDA runtime's usual contract.
//
// Thread safety: stateless; usable from any host thread.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/device.cuh"

namespace skiff::cuda {

inline constexpr int kWarpSize = 32;
// Threads per block for the row-parallel kernels: 8 warps is enough to hide latency on sm_80/90
// with up to 8 resident blocks/SM while keeping per-block shared memory small.
inline constexpr int kRowBlockThreads = 256;
inline constexpr int kWarpsPerRowBlock = kRowBlockThreads / kWarpSize;
// Cap on blocks for grid-stride element-wise kernels: a few waves of 132 SMs x 8 blocks; beyond
// that extra blocks only add scheduling overhead since each thread loops.
inline constexpr int64_t kMaxGridBlocks = 65535;

// The status of the most recent launch(es) on this thread (clears the runtime's non-sticky error).
inline Status CheckLaunch(const char* what) {
  return FromCudaError(static_cast<int>(cudaGetLastError()), what);
}

// Converts a runtime call's result into a Status naming the call.
#define SKIFF_CUDA_RETURN_IF_ERROR(call) \
  SKIFF_RETURN_IF_ERROR(::skiff::cuda::FromCudaError(static_cast<int>(call), #call))

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `work_items` items at `per_block` items per block, capped for grid-stride loops.
inline unsigned GridFor(int64_t work_items, int64_t per_block) {
  return static_cast<unsigned>(
      std::clamp<int64_t>(CeilDiv(work_items, per_block), 1, kMaxGridBlocks));
}

// `bytes` rounded up to the 256-byte alignment of the segments a workspace is cut into.
inline size_t AlignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

#ifdef __CUDACC__
// A grid-stride loop of `i` over [0, n) (a grid capped by GridFor covers any n in one launch).
#define SKIFF_GRID_STRIDE(i, n)                                                          \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
// Global warp index and lane for warp-per-row kernels over a 1-D grid.
__device__ __forceinline__ int64_t GlobalWarp() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
}
__device__ __forceinline__ int64_t WarpCount() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x / kWarpSize;
}
__device__ __forceinline__ int Lane() { return threadIdx.x & (kWarpSize - 1); }
#endif

}  // namespace skiff::cuda
