// ReadFile: a file opened for reading by the I/O engines, with its direct-I/O alignment.
//
// OpenForRead opens with O_DIRECT when asked and the file system supports it. The alignment that
// O_DIRECT needs (memory address, file offset and length) is discovered with statx(STATX_DIOALIGN)
// where the kernel reports it (Linux >= 6.1) and is otherwise assumed to be 4096 bytes, which
// covers every common block size. On a file system without O_DIRECT (tmpfs answers EINVAL, or statx
// reports no direct-I/O support) the file is opened buffered and one warning names the file.
//
// Thread safety: a value type; the descriptor may be read by many threads (pread / io_uring).
#pragma once

#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::storage {

inline constexpr uint32_t kDefaultDirectAlignment = 4096;

class ReadFile {
 public:
  ReadFile() = default;
  // Opens `path` read-only. `direct`: try O_DIRECT (falling back to buffered with a warning when
  // the file system refuses it). NotFound / IOError naming the path on failure.
  static Result<ReadFile> OpenForRead(const std::string& path, bool direct);
  ~ReadFile();
  ReadFile(ReadFile&& other) noexcept;
  ReadFile& operator=(ReadFile&& other) noexcept;
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool direct() const { return direct_; }
  uint64_t size_bytes() const { return size_bytes_; }
  // Alignment every request on this file must honour (address, offset, length); 1 when buffered.
  uint32_t alignment() const { return direct_ ? alignment_ : 1; }
  // The direct-I/O alignment of the file's file system (4096 when unknown), whether or not the file
  // was opened O_DIRECT. Callers that want page-cache-independent request shapes use this.
  uint32_t direct_alignment() const { return alignment_; }

 private:
  int fd_ = -1;
  std::string path_;
  bool direct_ = false;
  uint32_t alignment_ = kDefaultDirectAlignment;
  uint64_t size_bytes_ = 0;
};

// Creates (or replaces) `path` with `bytes` of pseudo-random data, written through a temporary name
// and renamed when complete (a failed or interrupted run removes the temporary). Used by `skiff
// iobench raw --create-file` and tests.
Status CreateRandomFile(const std::string& path, uint64_t bytes, uint64_t seed);

}  // namespace skiff::storage
