// PinnedBuffer: page-locked host staging memory for H2D copies and zero-copy gathers.
//
// Thread safety: the object is not thread-safe; its memory may be filled by one thread while the
// device reads another buffer (callers order reuse with CudaEvents, see stream.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::cuda {
// Page-locked host memory (cudaHostAlloc, portable and mapped), so H2D copies run at full PCIe
// speed asynchronously and kernels can read it zero-copy (GatherRows). Move-only.
class PinnedBuffer {
 public:
  // ResourceExhausted when the OS cannot pin that much (ulimit -l, or RAM).
  static Result<PinnedBuffer> Create(size_t bytes);
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();

  void* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  // The same memory's address for kernels (equal to data() under unified addressing).
  void* device_pointer() const { return device_pointer_; }

 private:
  void* data_ = nullptr;
  void* device_pointer_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace skiff::cuda
