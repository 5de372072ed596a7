#include "fuzz/fuzz_input.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace skiff::fuzz {
namespace {

// The scratch directory, created on first use and removed when the process exits.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "skiff-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& Scratch() {
  static ScratchDir dir;
  return dir.path();
}

}  // namespace

FuzzInput::FuzzInput(const uint8_t* data, size_t size, const std::string& suffix) {
  path_ = Scratch() + "/input" + suffix;
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::perror(path_.c_str());
    std::abort();
  }
}

FuzzInput::~FuzzInput() { ::unlink(path_.c_str()); }

}  // namespace skiff::fuzz
