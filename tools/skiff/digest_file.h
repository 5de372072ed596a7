// DigestFile: a text file of checksum lines (train::BatchDigestLine) that `skiff train
// --batch-digest` and `skiff ownership --digest` write, so that a job's batches can be compared
// with one process's. Closed by its destructor; Close() closes it with a check. Errors name the
// option and the path.
//
// Thread safety: one thread.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "skiff/status.h"

namespace skiff::cli {

class DigestFile {
 public:
  // `option` names the file in errors ("--batch-digest").
  explicit DigestFile(std::string option) : option_(std::move(option)) {}

  Status Open(const std::string& path) {
    path_ = path;
    file_.reset(std::fopen(path.c_str(), "w"));
    if (file_ == nullptr) return Status::IOError(option_ + ": cannot write " + path);
    return Status::Ok();
  }
  Status Write(const std::string& line) {
    if (std::fprintf(file_.get(), "%s\n", line.c_str()) < 0) {
      return Status::IOError(option_ + ": writing " + path_);
    }
    return Status::Ok();
  }
  Status Close() {
    if (file_ != nullptr && std::fclose(file_.release()) != 0) {
      return Status::IOError(option_ + ": closing " + path_);
    }
    return Status::Ok();
  }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string option_, path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

}  // namespace skiff::cli
