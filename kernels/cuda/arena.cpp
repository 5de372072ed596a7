#include "kernels/cuda/arena.cuh"

#include <string>
#include <utility>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
// --- DeviceArena -----------------------------------------------------------------------------

Result<DeviceArena> DeviceArena::Create(size_t capacity_bytes) {
  void* base = nullptr;
  if (capacity_bytes > 0) {
    const cudaError_t err = cudaMalloc(&base, capacity_bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      const Status st = FromCudaError(err, "cudaMalloc");
      const std::string msg = "device arena of " + DescribeBytes(capacity_bytes) +
                              " does not fit: the device has " + DescribeBytes(free_bytes) +
                              " free of " + DescribeBytes(total_bytes) + " (" + st.message() +
                              "); lower the GPU memory budget or the batch size";
      return err == cudaErrorMemoryAllocation ? Status::ResourceExhausted(msg)
                                              : Status(st.WithContext("device arena"));
    }
  }
  return DeviceArena(base, capacity_bytes);
}

DeviceArena::DeviceArena(DeviceArena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      capacity_bytes_(std::exchange(other.capacity_bytes_, 0)),
      used_bytes_(std::exchange(other.used_bytes_, 0)),
      peak_bytes_(std::exchange(other.peak_bytes_, 0)) {}

DeviceArena& DeviceArena::operator=(DeviceArena&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) cudaFree(base_);
    base_ = std::exchange(other.base_, nullptr);
    capacity_bytes_ = std::exchange(other.capacity_bytes_, 0);
    used_bytes_ = std::exchange(other.used_bytes_, 0);
    peak_bytes_ = std::exchange(other.peak_bytes_, 0);
  }
  return *this;
}

DeviceArena::~DeviceArena() {
  if (base_ != nullptr) cudaFree(base_);
}

Result<void*> DeviceArena::Allocate(size_t bytes, const char* what) {
  // Every allocation takes at least one aligned unit, so distinct calls get distinct pointers.
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const size_t take = rounded == 0 ? kAlignment : rounded;
  if (take > capacity_bytes_ - used_bytes_ || base_ == nullptr) {
    return Status::ResourceExhausted(
        std::string("device arena: cannot allocate ") + DescribeBytes(bytes) + " for " + what +
        ": " + DescribeBytes(used_bytes_) + " of " + DescribeBytes(capacity_bytes_) +
        " already in use this batch; raise the GPU memory budget or lower the batch size/fanouts");
  }
  void* p = static_cast<char*>(base_) + used_bytes_;
  used_bytes_ += take;
  if (used_bytes_ > peak_bytes_) peak_bytes_ = used_bytes_;
  return p;
}

}  // namespace skiff::cuda
