#include "skiff/convert/spill_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>

#include "skiff/io/staged_dir.h"
#include "skiff/io/write_path.h"
#include "skiff/log.h"

namespace skiff::convert {
namespace fs = std::filesystem;

namespace {
std::atomic<uint64_t> g_spill_dir_counter{0};

// Removes "<parent>/<prefix><pid>-<n>" directories of processes that no longer exist: spill
// directories of runs killed outright (SIGKILL, the OOM killer), which nothing else would remove
// when they lie outside a dataset's staging directory (--tmp-dir, or the system's).
void RemoveDeadRunsSpillDirs(const std::string& parent, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash <= prefix.size() ||
        name.find_first_not_of("0123456789", dash + 1) != std::string::npos ||
        !io::LeftByDeadRun(name.substr(0, dash), prefix)) {
      continue;
    }
    LogInfo("removing " + entry.path().string() + ", left by a run that no longer exists");
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
  }
}
}  // namespace

SpillDir::SpillDir(std::string parent, std::string tag)
    : parent_(std::move(parent)), tag_(std::move(tag)) {}

SpillDir::~SpillDir() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Result<std::string> SpillDir::Path(const std::string& name) {
  if (dir_.empty()) {
    const std::string parent = parent_.empty() ? fs::temp_directory_path().string() : parent_;
    const std::string prefix = "skiff-" + tag_ + "-";
    RemoveDeadRunsSpillDirs(parent, prefix);
    std::string dir = parent + "/" + prefix + std::to_string(::getpid()) + "-" +
                      std::to_string(g_spill_dir_counter.fetch_add(1));
    if (::mkdir(dir.c_str(), 0700) != 0) {
      return Status::FromErrno(errno, "create spill directory " + dir);
    }
    dir_ = std::move(dir);
    remove_on_interrupt_ = RemoveOnInterrupt(dir_);
  }
  return dir_ + "/" + name;
}

SpillWriter::~SpillWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status SpillWriter::Open(const std::string& path, size_t buffer_bytes) {
  SKIFF_CHECK(fd_ < 0);
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) return Status::FromErrno(errno, "create spill file " + path);
  buffer_.resize(std::max<size_t>(buffer_bytes, 4096));
  used_ = 0;
  bytes_written_ = 0;
  return Status::Ok();
}

Status SpillWriter::Flush() {
  if (used_ == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(io::WriteAll(fd_, buffer_.data(), used_, "spill file " + path_));
  used_ = 0;
  return Status::Ok();
}

Status SpillWriter::Append(const void* data, size_t bytes) {
  SKIFF_CHECK(fd_ >= 0);
  const char* src = static_cast<const char*>(data);
  bytes_written_ += bytes;
  while (bytes > 0) {
    if (used_ == buffer_.size()) SKIFF_RETURN_IF_ERROR(Flush());
    if (used_ == 0 && bytes >= buffer_.size()) {
      return io::WriteAll(fd_, src, bytes, "spill file " + path_);
    }
    const size_t n = std::min(bytes, buffer_.size() - used_);
    std::memcpy(buffer_.data() + used_, src, n);
    used_ += n;
    src += n;
    bytes -= n;
  }
  return Status::Ok();
}

Status SpillWriter::Close() {
  if (fd_ < 0) return Status::Ok();
  Status st = Flush();
  if (::close(fd_) != 0 && st.ok()) st = Status::FromErrno(errno, "close spill file " + path_);
  fd_ = -1;
  buffer_.clear();
  buffer_.shrink_to_fit();
  return st;
}

SpillReader::~SpillReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status SpillReader::Open(const std::string& path, size_t buffer_bytes) {
  SKIFF_CHECK(fd_ < 0);
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::FromErrno(errno, "open spill file " + path);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  buffer_.resize(std::max<size_t>(buffer_bytes, 4096));
  pos_ = end_ = 0;
  eof_ = false;
  return Status::Ok();
}

Status SpillReader::Fill(size_t need) {
  if (end_ - pos_ >= need || eof_) return Status::Ok();
  // Keep the unread tail at the front; grow the buffer for a record longer than it.
  std::memmove(buffer_.data(), buffer_.data() + pos_, end_ - pos_);
  end_ -= pos_;
  pos_ = 0;
  if (buffer_.size() < need) buffer_.resize(need);
  while (end_ < need && !eof_) {
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "read spill file " + path_);
    }
    if (n == 0) eof_ = true;
    end_ += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status SpillReader::Read(size_t bytes, std::string_view* out) {
  SKIFF_CHECK(fd_ >= 0);
  SKIFF_RETURN_IF_ERROR(Fill(bytes));
  if (end_ - pos_ < bytes) {
    return Status::Corruption("spill file " + path_ + " ends mid-record (" +
                              std::to_string(end_ - pos_) + " of " + std::to_string(bytes) +
                              " bytes left)");
  }
  *out = std::string_view(buffer_.data() + pos_, bytes);
  pos_ += bytes;
  return Status::Ok();
}

}  // namespace skiff::convert
