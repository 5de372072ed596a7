// DeviceArena: device memory sized once and handed out by bump allocation, reset as a whole
// (nothing allocates on the hot path). The CUDA model does not use it (its buffers grow to the
// largest batch and are reused: src/model/cuda/device_buffer.h); tests/gpu/test_memory.cpp does.
//
// Thread safety: not thread-safe; owned by the thread that drives the compute stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::cuda {

// One cudaMalloc'ed region handed out by bump allocation (256-byte aligned), released as a
// whole by Reset() once per batch. Move-only.
class DeviceArena {
 public:
  // Allocates capacity_bytes of device memory. ResourceExhausted (with the sizes and the
  // device's free memory) when it does not fit.
  static Result<DeviceArena> Create(size_t capacity_bytes);
  DeviceArena() = default;
  DeviceArena(DeviceArena&& other) noexcept;
  DeviceArena& operator=(DeviceArena&& other) noexcept;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;
  ~DeviceArena();

  // Returns `bytes` of device memory valid until Reset(), or ResourceExhausted naming `what`,
  // the request, the bytes in use and the capacity. Zero bytes returns a valid (unique) pointer.
  Result<void*> Allocate(size_t bytes, const char* what);
  template <typename T>
  Result<T*> AllocateArray(int64_t count, const char* what) {
    if (count < 0) return Status::InvalidArgument(std::string(what) + ": negative element count");
    SKIFF_ASSIGN_OR_RETURN(void* p, Allocate(sizeof(T) * static_cast<size_t>(count), what));
    return static_cast<T*>(p);
  }
  // Invalidates every allocation. The caller must know no queued kernel still reads them (e.g.
  // after waiting on the batch's "consumed" event).
  void Reset() { used_bytes_ = 0; }

  size_t capacity_bytes() const { return capacity_bytes_; }
  size_t used_bytes() const { return used_bytes_; }
  size_t peak_bytes() const { return peak_bytes_; }

  static constexpr size_t kAlignment = 256;

 private:
  DeviceArena(void* base, size_t capacity_bytes) : base_(base), capacity_bytes_(capacity_bytes) {}
  void* base_ = nullptr;
  size_t capacity_bytes_ = 0;
  size_t used_bytes_ = 0;
  size_t peak_bytes_ = 0;
};

}  // namespace skiff::cuda
