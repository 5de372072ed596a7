// PathLock: says "a run is writing this path". An exclusive advisory lock (flock) on the hidden
// file `<parent>/.<name>.lock`, held until the PathLock is destroyed or the process dies (the
// kernel drops it then, so a killed run never leaves a stale lock). A second Acquire of the same
// path, from this process or another, fails at once with Unavailable naming the path and the
// holder's PID, instead of both runs writing and one of them losing at the end.
//
// The lock file holds the holder's PID (for the message) and is removed on release, while still
// locked; Acquire checks that the file it locked is still the one at the path (else a run that
// opened it just before the removal would think it holds a lock nobody else can see). A killed
// run leaves the file, unlocked: the next run takes it over; an interrupted one removes it
// (skiff/interrupt.h).
//
// Thread safety: a PathLock is owned by one thread; Acquire may be called from any.
#pragma once

#include <string>

#include "skiff/interrupt.h"
#include "skiff/status.h"

namespace skiff {

class PathLock {
 public:
  // Locks `path` (which need not exist; its parent must). Unavailable when another holder has it.
  static Result<PathLock> Acquire(const std::string& path);

  PathLock() = default;
  ~PathLock();
  PathLock(PathLock&& other) noexcept;
  PathLock& operator=(PathLock&& other) noexcept;
  PathLock(const PathLock&) = delete;
  PathLock& operator=(const PathLock&) = delete;

  bool held() const { return fd_ >= 0; }
  void Release();  // removes the lock file and unlocks (idempotent)
  const std::string& lock_file() const { return lock_file_; }

 private:
  PathLock(int fd, std::string lock_file)
      : fd_(fd), lock_file_(std::move(lock_file)), remove_on_interrupt_(lock_file_) {}
  int fd_ = -1;
  std::string lock_file_;
  RemoveOnInterrupt remove_on_interrupt_;
};

}  // namespace skiff
