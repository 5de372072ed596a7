#include "skiff/storage/aligned_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace skiff::storage {

Result<AlignedBuffer> AlignedBuffer::Allocate(uint64_t bytes) {
  if (bytes == 0) return AlignedBuffer();
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t rounded = (bytes + page - 1) / page * page;
  void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Status::FromErrno(
        errno, "allocating an aligned I/O buffer of " + std::to_string(rounded) + " bytes (mmap)");
  }
  // Large I/O buffers ask for transparent huge pages: O_DIRECT pins the destination pages of every
  // read, and one 2 MiB page is cheaper to pin (and to map) than 512 small ones. Advisory only.
  if (rounded >= (2u << 20)) ::madvise(p, rounded, MADV_HUGEPAGE);
  return AlignedBuffer(static_cast<std::byte*>(p), rounded);
}

AlignedBuffer::~AlignedBuffer() { Release(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void AlignedBuffer::Release() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace skiff::storage
