// DeviceBuffer<T>: device memory that grows to the largest request and is then reused, the device
// counterpart of a host vector kept across batches (sizes settle after the first few batches).
//
// Growing frees the old allocation (cudaFree waits for the device to finish with it) and does not
// keep its contents. Thread safety: one thread at a time. Move-only RAII.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/cuda/device.cuh"
#include "skiff/status.h"

namespace skiff::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }

  // At least `count` elements (at least one); ResourceExhausted naming `what` when the device has
  // no room.
  Result<T*> Ensure(int64_t count, const char* what) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(count, 1));
    if (n <= capacity_) return ptr_;
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    capacity_ = 0;
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, n * sizeof(T));
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of a failed allocation
      return Status::ResourceExhausted(std::string("CUDA model: cannot allocate ") +
                                       DescribeBytes(n * sizeof(T)) + " of device memory for " +
                                       what + ": " + cudaGetErrorString(err));
    }
    ptr_ = static_cast<T*>(p);
    capacity_ = n;
    return ptr_;
  }
  T* get() const { return ptr_; }
  size_t capacity() const { return capacity_; }

 private:
  T* ptr_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace skiff::cuda
