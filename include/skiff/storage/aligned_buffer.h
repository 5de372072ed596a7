// AlignedBuffer: an owning, page-aligned, zero-initialised block of memory for O_DIRECT I/O.
//
// Memory comes from an anonymous mmap (so it is page aligned, which satisfies every O_DIRECT
// alignment a block device asks for, and it is returned to the kernel on destruction). Move-only.
//
// Thread safety: a value type; distinct buffers may be used from distinct threads. The bytes are
// plain memory: concurrent access to the same bytes needs the caller's synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "skiff/status.h"

namespace skiff::storage {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Allocates `bytes` (rounded up to the page size). ResourceExhausted when mmap fails.
  static Result<AlignedBuffer> Allocate(uint64_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  uint64_t size() const { return bytes_; }  // bytes usable (the rounded-up size)
  bool empty() const { return bytes_ == 0; }

 private:
  AlignedBuffer(std::byte* data, uint64_t bytes) : data_(data), bytes_(bytes) {}
  void Release();
  std::byte* data_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace skiff::storage
