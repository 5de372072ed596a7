#include "skiff/path_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>

namespace skiff {
namespace fs = std::filesystem;

Result<PathLock> PathLock::Acquire(const std::string& path) {
  fs::path target = fs::absolute(path);
  while (!target.has_filename() && target.has_parent_path() && target != target.root_path()) {
    target = target.parent_path();  // "out/" names "out"
  }
  const std::string lock_file =
      (target.parent_path() / ("." + target.filename().string() + ".lock")).string();
  // A holder unlinks the file before it lets go, so a lock won on a file that is no longer at the
  // path (unlinked or replaced meanwhile) is no lock: try again on the current one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "create lock file " + lock_file);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char pid[32] = {};
      const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) return Status::FromErrno(err, "lock " + lock_file);
      const std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "unknown";
      return Status::Unavailable(path + " is in use: another skiff run (PID " + holder +
                                 ") is writing it; wait for it to finish (lock " + lock_file + ")");
    }
    struct stat held {
    }, current{};
    if (::fstat(fd, &held) == 0 && ::stat(lock_file.c_str(), &current) == 0 &&
        held.st_dev == current.st_dev && held.st_ino == current.st_ino) {
      const std::string me = std::to_string(::getpid());
      // The PID is only for the message above: a failure to record it does not matter.
      if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
      return PathLock(fd, lock_file);
    }
    ::close(fd);
  }
  return Status::Unavailable("could not lock " + path + ": " + lock_file + " keeps changing");
}

PathLock::~PathLock() { Release(); }

void PathLock::Release() {
  if (fd_ < 0) return;
  ::unlink(lock_file_.c_str());  // while still held: see Acquire
  ::close(fd_);                  // releases the flock
  fd_ = -1;
  remove_on_interrupt_.Release();
}

PathLock::PathLock(PathLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      lock_file_(std::move(other.lock_file_)),
      remove_on_interrupt_(std::move(other.remove_on_interrupt_)) {}

PathLock& PathLock::operator=(PathLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
    lock_file_ = std::move(other.lock_file_);
    remove_on_interrupt_ = std::move(other.remove_on_interrupt_);
  }
  return *this;
}

}  // namespace skiff
