#include "kernels/cuda/gather.cuh"

#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// Which side of a row copy the indices name: the source (gather) or the destination (scatter).
enum class Indexed { kSource, kDestination };

// One warp per row copied; float4 when rows are 16-byte aligned (dim % 4 == 0 and aligned base
// pointers), so a 128-float row is one 512-byte coalesced read -- which over PCIe (zero-copy)
// is what keeps the transfer in full-size TLPs.
template <bool kVec4, Indexed kIndexed>
__global__ void __launch_bounds__(kRowBlockThreads)
    CopyRowsKernel(const float* __restrict__ src, int64_t dim, const int64_t* __restrict__ idx,
                   int64_t n, float* __restrict__ dst) {
  const int lane = Lane();
  for (int64_t row = GlobalWarp(); row < n; row += WarpCount()) {
    const float* s = src + (kIndexed == Indexed::kSource ? idx[row] : row) * dim;
    float* d = dst + (kIndexed == Indexed::kDestination ? idx[row] : row) * dim;
    if constexpr (kVec4) {
      const auto* s4 = reinterpret_cast<const float4*>(s);
      auto* d4 = reinterpret_cast<float4*>(d);
      for (int64_t k = lane; k < dim / 4; k += kWarpSize) d4[k] = s4[k];
    } else {
      for (int64_t k = lane; k < dim; k += kWarpSize) d[k] = s[k];
    }
  }
}

// One warp per source row; lanes stride the columns; atomicAdd resolves duplicate indices.
__global__ void __launch_bounds__(kRowBlockThreads)
    ScatterAddRowsKernel(const float* __restrict__ src, int64_t dim,
                         const int64_t* __restrict__ idx, int64_t n, float* __restrict__ dst) {
  const int lane = Lane();
  for (int64_t row = GlobalWarp(); row < n; row += WarpCount()) {
    const float* s = src + row * dim;
    float* d = dst + idx[row] * dim;
    for (int64_t k = lane; k < dim; k += kWarpSize) atomicAdd(&d[k], s[k]);
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Status CheckSizes(const char* op, int64_t dim, int64_t n) {
  if (dim < 0 || n < 0) {
    return Status::InvalidArgument(std::string(op) + ": negative size (dim=" + std::to_string(dim) +
                                   ", n=" + std::to_string(n) + ")");
  }
  return Status::Ok();
}

// Grid: one warp per row, 8 rows per 256-thread block (common.cuh).
template <Indexed kIndexed>
Status LaunchCopyRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                      cudaStream_t stream) {
  const unsigned grid = GridFor(n, kWarpsPerRowBlock);
  if (dim % 4 == 0 && Aligned16(src) && Aligned16(dst)) {
    CopyRowsKernel<true, kIndexed><<<grid, kRowBlockThreads, 0, stream>>>(src, dim, idx, n, dst);
  } else {
    CopyRowsKernel<false, kIndexed><<<grid, kRowBlockThreads, 0, stream>>>(src, dim, idx, n, dst);
  }
  return CheckLaunch("CopyRowsKernel");
}

}  // namespace

Status GatherRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                  cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("GatherRows", dim, n));
  if (dim == 0 || n == 0) return Status::Ok();
  // Resolve the device-side address of src: identical to src for device memory, and for mapped
  // pinned memory under unified addressing; pageable memory is refused rather than faulting.
  cudaPointerAttributes attr{};
  SKIFF_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attr, src));
  if (attr.type == cudaMemoryTypeUnregistered || attr.devicePointer == nullptr) {
    return Status::InvalidArgument(
        "GatherRows: src is pageable host memory; pass device memory or pinned memory mapped into "
        "the device (cudaHostAlloc with cudaHostAllocMapped, see PinnedBuffer)");
  }
  const auto* dev_src = static_cast<const float*>(attr.devicePointer);
  return LaunchCopyRows<Indexed::kSource>(dev_src, dim, idx, n, dst, stream);
}

Status ScatterAddRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                      cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("ScatterAddRows", dim, n));
  if (dim == 0 || n == 0) return Status::Ok();
  ScatterAddRowsKernel<<<GridFor(n, kWarpsPerRowBlock), kRowBlockThreads, 0, stream>>>(src, dim,
                                                                                       idx, n, dst);
  return CheckLaunch("ScatterAddRowsKernel");
}

Status ScatterRows(const float* src, int64_t dim, const int64_t* idx, int64_t n, float* dst,
                   cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("ScatterRows", dim, n));
  if (dim == 0 || n == 0) return Status::Ok();
  return LaunchCopyRows<Indexed::kDestination>(src, dim, idx, n, dst, stream);
}

}  // namespace skiff::cuda
