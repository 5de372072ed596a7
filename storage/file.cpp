#include "skiff/storage/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <utility>
#include <vector>

#include "skiff/interrupt.h"
#include "skiff/log.h"
#include "skiff/progress.h"

namespace skiff::storage {
namespace {

// Direct-I/O alignment from statx(STATX_DIOALIGN): returns 0 when the file system reports that it
// does not support direct I/O, kDefaultDirectAlignment when the kernel cannot tell.
uint32_t DiscoverDirectAlignment(int fd) {
#ifdef STATX_DIOALIGN
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN)) {
    if (stx.stx_dio_offset_align == 0 || stx.stx_dio_mem_align == 0) return 0;
    uint32_t a = std::max(stx.stx_dio_offset_align, stx.stx_dio_mem_align);
    // Requests are also sized in units of the alignment; never go below 512.
    return std::max<uint32_t>(a, 512);
  }
#endif
  (void)fd;
  return kDefaultDirectAlignment;
}

}  // namespace

Result<ReadFile> ReadFile::OpenForRead(const std::string& path, bool direct) {
  ReadFile f;
  f.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  bool is_direct = direct;
  if (fd < 0 && direct && errno == EINVAL) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    is_direct = false;
    if (fd >= 0) {
      LogWarning(path +
                 ": the file system does not support O_DIRECT; reading through the page cache");
    }
  }
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  f.fd_ = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "fstat " + path);
  f.size_bytes_ = static_cast<uint64_t>(st.st_size);
  const uint32_t a = DiscoverDirectAlignment(fd);
  if (a == 0) {
    f.alignment_ = kDefaultDirectAlignment;
    if (is_direct) {
      LogWarning(path +
                 ": the file system reports no direct-I/O support; reading through the "
                 "page cache");
      const int fd2 = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd2 < 0) return Status::FromErrno(errno, "open " + path);
      ::close(f.fd_);
      f.fd_ = fd2;
      is_direct = false;
    }
  } else {
    f.alignment_ = a;
  }
  f.direct_ = is_direct;
  return f;
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

ReadFile::ReadFile(ReadFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      direct_(o.direct_),
      alignment_(o.alignment_),
      size_bytes_(o.size_bytes_) {}

ReadFile& ReadFile::operator=(ReadFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    direct_ = o.direct_;
    alignment_ = o.alignment_;
    size_bytes_ = o.size_bytes_;
  }
  return *this;
}

Status CreateRandomFile(const std::string& path, uint64_t bytes, uint64_t seed) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const RemoveOnInterrupt remove_if_interrupted(tmp);  // renamed to `path` once whole
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> chunk((8u << 20) / 8);
  uint64_t done = 0;
  Progress progress("create " + path, bytes, "B");
  while (done < bytes) {
    for (auto& w : chunk) w = rng();
    const uint64_t n = std::min<uint64_t>(chunk.size() * 8, bytes - done);
    const char* p = reinterpret_cast<const char*>(chunk.data());
    uint64_t written = 0;
    while (written < n) {
      const ssize_t w = ::write(fd, p + written, n - written);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : EIO;
        ::close(fd);
        ::unlink(tmp.c_str());
        return Status::FromErrno(err, "write " + tmp);
      }
      written += static_cast<uint64_t>(w);
    }
    done += n;
    progress.Add(n);
  }
  progress.Finish();
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::FromErrno(err, "fsync/close " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::FromErrno(err, "rename " + tmp + " to " + path);
  }
  return Status::Ok();
}

}  // namespace skiff::storage
