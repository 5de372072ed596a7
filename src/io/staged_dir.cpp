#include "skiff/io/staged_dir.h"

#include <linux/fs.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "skiff/io/write_path.h"
#include "skiff/log.h"

namespace skiff::io {
namespace {

namespace fs = std::filesystem;

std::string WithoutTrailingSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The previous directory, once replaced: a failure to remove it is only a warning (the new one is
// in place).
void RemovePrevious(const std::string& previous) {
  std::error_code ec;
  fs::remove_all(previous, ec);
  if (ec) {
    LogWarning("could not remove the previous directory, now at " + previous + " (" + ec.message() +
               "): remove it yourself");
  }
}

}  // namespace

bool LeftByDeadRun(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = name.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) {
    return false;
  }
  const pid_t pid = static_cast<pid_t>(std::stol(digits));
  return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

void CleanUpAfterDeadRuns(const std::string& dir, const std::vector<std::string>& more) {
  std::error_code ec;
  const fs::path path = fs::absolute(dir, ec);
  if (ec) return;
  const std::string base = path.filename().string();
  std::vector<std::string> prefixes{base + ".tmp-", base + ".old-"};
  for (const std::string& suffix : more) prefixes.push_back(base + suffix);
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(path.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (LeftByDeadRun(name, base + ".old-") && !fs::exists(path, ec)) {
      LogWarning("restoring " + path.string() + " from " + entry.path().string() +
                 ", left by a run that died while replacing it");
      if (Rename(entry.path().string(), path.string()) == 0) continue;
    }
    for (const std::string& prefix : prefixes) {
      if (LeftByDeadRun(name, prefix)) stale.push_back(entry.path());
    }
  }
  for (const fs::path& p : stale) {
    LogInfo("removing " + p.string() + ", left by a run that no longer exists");
    fs::remove_all(p, ec);
  }
}

Result<std::unique_ptr<StagedDirectory>> StagedDirectory::Create(
    const std::string& dir, ReplaceRule replaceable, std::vector<std::string> more_siblings) {
  const std::string target = WithoutTrailingSlash(dir);
  std::error_code ec;
  const fs::path parent = fs::absolute(target, ec).parent_path();
  if (ec || !fs::is_directory(parent, ec)) {
    return Status::NotFound("output directory's parent " + parent.string() + " does not exist");
  }
  // Locked before anything else is looked at, so a second run is told at once.
  SKIFF_ASSIGN_OR_RETURN(PathLock lock, PathLock::Acquire(target));
  CleanUpAfterDeadRuns(target, more_siblings);
  const bool existed = fs::exists(target, ec);
  if (existed) SKIFF_RETURN_IF_ERROR(replaceable(target));
  const std::string staging = target + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(staging, ec);
  if (::mkdir(staging.c_str(), 0755) != 0) {
    return Status::FromErrno(errno, "create directory " + staging);
  }
  return std::unique_ptr<StagedDirectory>(
      new StagedDirectory(target, staging, std::move(replaceable), existed, std::move(lock)));
}

StagedDirectory::StagedDirectory(std::string dir, std::string staging, ReplaceRule replaceable,
                                 bool existed, PathLock lock)
    : dir_(std::move(dir)),
      staging_(std::move(staging)),
      replaceable_(std::move(replaceable)),
      existed_(existed),
      lock_(std::move(lock)),
      remove_on_interrupt_(staging_) {}

StagedDirectory::~StagedDirectory() {
  if (published_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

Status StagedDirectory::Publish() {
  SKIFF_CHECK(!published_);
  // An interruption waits until this returns: then the staging directory is either published (no
  // longer registered) or still staging (removed).
  const InterruptCleanupHold hold;
  const Status st = PublishStaging();
  if (published_) remove_on_interrupt_.Release();
  return st;
}

Status StagedDirectory::PublishStaging() {
  SKIFF_RETURN_IF_ERROR(FsyncPath(staging_));
  if (Rename(staging_, dir_, RENAME_NOREPLACE) == 0) {
    published_ = true;
  } else if (errno == EEXIST || errno == ENOTEMPTY || errno == EINVAL || errno == ENOSYS) {
    std::error_code ec;
    if (fs::exists(dir_, ec)) {
      SKIFF_RETURN_IF_ERROR(CheckRaced());
      SKIFF_RETURN_IF_ERROR(Replace());
    } else if (Rename(staging_, dir_) != 0) {  // no RENAME_NOREPLACE here, and nothing at dir_
      return Status::FromErrno(errno, "rename " + staging_ + " to " + dir_);
    }
    published_ = true;
  } else {
    return Status::FromErrno(errno, "rename " + staging_ + " to " + dir_);
  }
  (void)FsyncPath(fs::absolute(dir_).parent_path().string());
  return Status::Ok();
}

Status StagedDirectory::CheckRaced() {
  return replaceable_(dir_).WithContext(
      "output " + dir_ + " was " + (existed_ ? "changed" : "created") +
      " by another run while this one was writing; it was left as it is");
}

Status StagedDirectory::Replace() {
  if (Rename(staging_, dir_, RENAME_EXCHANGE) == 0) {
    RemovePrevious(staging_);  // now the previous directory
    return Status::Ok();
  }
  if (errno != EINVAL && errno != ENOSYS) {
    return Status::FromErrno(errno, "swap " + staging_ + " with " + dir_);
  }
  const std::string old_dir = dir_ + ".old-" + std::to_string(::getpid());
  if (Rename(dir_, old_dir) != 0) return Status::FromErrno(errno, "move " + dir_ + " aside");
  if (Rename(staging_, dir_) != 0) {
    const Status failed = Status::FromErrno(errno, "rename " + staging_ + " to " + dir_);
    (void)Rename(old_dir, dir_);  // put the previous one back
    return failed;
  }
  RemovePrevious(old_dir);
  return Status::Ok();
}

}  // namespace skiff::io
