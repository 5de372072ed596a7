// The system calls of every durable write (dataset files, their sidecars and manifest, checkpoints,
// exports): write, fsync and rename, each passed through one fault-injection seam first.
//
// Why a seam: "nothing half-written is ever visible" is a claim about every failure at every step
// of a write and its publication, and real disks fail rarely and at random. Tests install
// WriteFaults rules that make the N-th write-path operation of the process fail with ENOSPC or
// EIO, write only part of what it was asked, fail a rename with EINVAL (a file system without
// RENAME_EXCHANGE / RENAME_NOREPLACE), or end the process on the spot as a crash would
// (LevelDB's FaultInjectionTestEnv, at the level of these calls). Without rules installed each
// wrapper costs one relaxed atomic load.
//
// Operations are numbered 0, 1, 2, ... in the order the process calls them, from the moment the
// rules are installed; a write counts once per system call (a short write's retry is a new
// operation).
//
// Thread safety: the wrappers may be called from any thread. Install and remove rules (a
// ScopedWriteFaults) only while no other thread writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::io {

enum class WriteOp { kWrite, kFsync, kRename };

enum class WriteFaultKind {
  kEnospc,      // the call fails with ENOSPC
  kEio,         // the call fails with EIO
  kShortWrite,  // a write writes half of what it was asked (at least one byte); others unaffected
  kEinval,      // a rename with flags fails with EINVAL, as where the file system lacks them
  kCrash,       // the process ends before the call (_exit(kWriteFaultCrashExit))
};

struct WriteFaultRule {
  WriteFaultKind kind = WriteFaultKind::kEio;
  uint64_t first_op = 0;  // number of the first operation affected
  uint64_t count = 1;     // how many consecutive operations are affected
};

inline constexpr int kWriteFaultCrashExit = 86;

// Installs `rules` for the whole process until destroyed (tests only; at most one at a time). The
// first rule that applies to an operation decides what happens to it.
class ScopedWriteFaults {
 public:
  explicit ScopedWriteFaults(std::vector<WriteFaultRule> rules);
  ~ScopedWriteFaults();
  ScopedWriteFaults(const ScopedWriteFaults&) = delete;
  ScopedWriteFaults& operator=(const ScopedWriteFaults&) = delete;

  uint64_t ops_seen() const;         // operations numbered so far
  uint64_t faults_injected() const;  // operations a rule changed
};

// write(2) until all `bytes` are written (retrying EINTR and short writes). IOError or
// ResourceExhausted naming `path` on failure.
Status WriteAll(int fd, const void* data, size_t bytes, const std::string& path);
// pwrite(2) of all `bytes` at `offset`, likewise (the same fault rules as WriteAll).
Status PwriteAll(int fd, const void* data, size_t bytes, uint64_t offset, const std::string& path);
// pread(2) of all `bytes` at `offset` (retrying EINTR and short reads). IOError naming `path` and
// the offset, or Corruption when the file ends first ("file is truncated").
Status PreadAll(int fd, void* dst, uint64_t bytes, uint64_t offset, const std::string& path);
// fsync(2) of an open file, and of the file or directory at `path`.
Status Fsync(int fd, const std::string& path);
Status FsyncPath(const std::string& path);
// renameat2(2) with `flags` (0, RENAME_NOREPLACE or RENAME_EXCHANGE): 0, or -1 with errno set.
int Rename(const std::string& from, const std::string& to, unsigned int flags = 0);

}  // namespace skiff::io
