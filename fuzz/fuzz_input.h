// FuzzInput: a fuzzer's bytes as a file the readers can open (they take paths: files, .gz, .npz).
// One scratch directory per process (removed at exit), one file per input, named with the suffix
// the reader dispatches on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace skiff::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size, const std::string& suffix);
  ~FuzzInput();
  FuzzInput(const FuzzInput&) = delete;
  FuzzInput& operator=(const FuzzInput&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace skiff::fuzz

// Every target defines the libFuzzer entry point; replay_main.cpp calls it for the corpus files in
// builds without libFuzzer.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
