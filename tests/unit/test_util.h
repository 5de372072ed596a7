// Helpers shared by unit tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace skiff::testing {

// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = (std::filesystem::temp_directory_path() /
             ("skiff-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd())))
                .string();
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The PID of a child that has exited and been reaped: a process that no longer exists (until the
// system reuses its PID), for tests of what runs that died leave behind. -1 if fork fails.
inline pid_t ExitedPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  if (pid < 0 || ::waitpid(pid, nullptr, 0) != pid) return -1;
  return pid;
}

// This process's open files that were created unnamed (O_TMPFILE) in `dir`, as /proc/self/fd paths
// (they can be reopened or sized through them).
inline std::vector<std::string> UnnamedFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (!ec && target.rfind(dir + "/#", 0) == 0 && target.find("(deleted)") != std::string::npos) {
      out.push_back(entry.path().string());
    }
  }
  return out;
}

// XORs byte `offset` of the file at `path` with `mask`: damage under a checksum (twice: undone).
inline void FlipByte(const std::string& path, uint64_t offset, char mask = 0x5a) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c ^= mask;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

// Directory of the shared real datasets, or "" if absent (tests then skip).
inline std::string DatasetsDir() {
  std::error_code ec;
  return std::filesystem::is_directory(SKIFF_DATASETS_DIR, ec) ? SKIFF_DATASETS_DIR : "";
}

}  // namespace skiff::testing
