// Helpers shared by unit tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

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

// Directory of the shared real datasets, or "" if absent (tests then skip).
inline std::string DatasetsDir() {
  std::error_code ec;
  return std::filesystem::is_directory(SKIFF_DATASETS_DIR, ec) ? SKIFF_DATASETS_DIR : "";
}

}  // namespace skiff::testing
