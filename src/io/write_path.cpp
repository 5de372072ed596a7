#include "skiff/io/write_path.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>

#include "skiff/log.h"
#include "skiff/mutex.h"

namespace skiff::io {
namespace {

struct Faults {
  Mutex mu;
  std::vector<WriteFaultRule> rules SKIFF_GUARDED_BY(mu);
  uint64_t ops SKIFF_GUARDED_BY(mu) = 0;
  uint64_t injected SKIFF_GUARDED_BY(mu) = 0;
};

std::atomic<Faults*> g_faults{nullptr};

// What the seam decides for the next operation: go ahead (0), fail with an errno, or (writes)
// write only part.
struct Decision {
  int error = 0;
  bool short_write = false;
};

Decision Next(WriteOp op, bool has_flags) {
  Faults* faults = g_faults.load(std::memory_order_acquire);
  if (faults == nullptr) return {};
  MutexLock lock(&faults->mu);
  const uint64_t n = faults->ops++;
  for (const WriteFaultRule& rule : faults->rules) {
    if (n < rule.first_op || n - rule.first_op >= rule.count) continue;
    switch (rule.kind) {
      case WriteFaultKind::kCrash:
        ::_exit(kWriteFaultCrashExit);
      case WriteFaultKind::kEnospc:
        ++faults->injected;
        return {ENOSPC, false};
      case WriteFaultKind::kEio:
        ++faults->injected;
        return {EIO, false};
      case WriteFaultKind::kShortWrite:
        if (op != WriteOp::kWrite) break;
        ++faults->injected;
        return {0, true};
      case WriteFaultKind::kEinval:
        if (op != WriteOp::kRename || !has_flags) break;
        ++faults->injected;
        return {EINVAL, false};
    }
  }
  return {};
}

}  // namespace

ScopedWriteFaults::ScopedWriteFaults(std::vector<WriteFaultRule> rules) {
  auto* faults = new Faults;
  faults->rules = std::move(rules);
  Faults* expected = nullptr;
  SKIFF_CHECK(g_faults.compare_exchange_strong(expected, faults));
}

ScopedWriteFaults::~ScopedWriteFaults() { delete g_faults.exchange(nullptr); }

uint64_t ScopedWriteFaults::ops_seen() const {
  Faults* faults = g_faults.load();
  MutexLock lock(&faults->mu);
  return faults->ops;
}

uint64_t ScopedWriteFaults::faults_injected() const {
  Faults* faults = g_faults.load();
  MutexLock lock(&faults->mu);
  return faults->injected;
}

namespace {

// What WriteAll and PwriteAll share: write until every byte is written, retrying on EINTR and
// honouring injected faults (short writes, errors); with pwrite at `offset` when one is given.
Status WriteLoop(int fd, const char* p, size_t bytes, std::optional<uint64_t> offset,
                 const std::string& path) {
  while (bytes > 0) {
    const Decision d = Next(WriteOp::kWrite, false);
    if (d.error != 0) return Status::FromErrno(d.error, "write " + path);
    const size_t ask = d.short_write ? std::max<size_t>(1, bytes / 2) : bytes;
    const ssize_t n = offset.has_value() ? ::pwrite(fd, p, ask, static_cast<off_t>(*offset))
                                         : ::write(fd, p, ask);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(
          errno, "write " + path +
                     (offset.has_value() ? " at byte " + std::to_string(*offset) : std::string()));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
    if (offset.has_value()) *offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status WriteAll(int fd, const void* data, size_t bytes, const std::string& path) {
  return WriteLoop(fd, static_cast<const char*>(data), bytes, std::nullopt, path);
}

Status PwriteAll(int fd, const void* data, size_t bytes, uint64_t offset, const std::string& path) {
  return WriteLoop(fd, static_cast<const char*>(data), bytes, offset, path);
}

Status PreadAll(int fd, void* dst, uint64_t bytes, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "read " + path + " at byte " + std::to_string(offset));
    }
    if (n == 0) {
      return Status::Corruption(path + ": file is truncated (unexpected end of file at byte " +
                                std::to_string(offset) + ")");
    }
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status Fsync(int fd, const std::string& path) {
  const Decision d = Next(WriteOp::kFsync, false);
  if (d.error != 0) return Status::FromErrno(d.error, "fsync " + path);
  if (::fsync(fd) != 0) return Status::FromErrno(errno, "fsync " + path);
  return Status::Ok();
}

Status FsyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path + " for fsync");
  const Status st = Fsync(fd, path);
  ::close(fd);
  return st;
}

int Rename(const std::string& from, const std::string& to, unsigned int flags) {
  const Decision d = Next(WriteOp::kRename, flags != 0);
  if (d.error != 0) {
    errno = d.error;
    return -1;
  }
  return ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), flags);
}

}  // namespace skiff::io
