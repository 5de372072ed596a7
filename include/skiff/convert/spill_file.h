// Scratch files of the external-memory passes of `skiff convert`: a private spill directory that
// removes itself, and buffered sequential writers and readers of its files.
//
// SpillDir creates "<parent>/skiff-<tag>-<pid>-<n>" on first use and removes it (and everything in
// it) when destroyed, whatever happened, so a failed conversion leaves no spill files behind; an
// interrupted one removes it too (skiff/interrupt.h). A process killed outright cannot clean up: by
// default the directory is inside the dataset's temporary directory, which is never published and
// which the next writer of that output removes; elsewhere (--tmp-dir) the next SpillDir of the same
// tag created there removes the directories of processes that no longer exist.
// SpillWriter appends
// through a fixed buffer; a full disk is ResourceExhausted naming the file. SpillReader reads a
// file front to back through a fixed buffer; Read(n) returns views of the next n bytes, valid until
// the next call on the same reader. Records are plain native-endian structs and byte strings: the
// files live only as long as the conversion that wrote them.
//
// Thread safety: each object is used by one thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/interrupt.h"
#include "skiff/status.h"

namespace skiff::convert {

class SpillDir {
 public:
  // `parent` "" means the system's temporary directory. Nothing is created until Path().
  SpillDir(std::string parent, std::string tag);
  ~SpillDir();  // removes the directory if it was created
  SpillDir(const SpillDir&) = delete;
  SpillDir& operator=(const SpillDir&) = delete;

  // Path of a new file `name` in the directory, creating the directory first if needed.
  Result<std::string> Path(const std::string& name);

 private:
  const std::string parent_;
  const std::string tag_;
  std::string dir_;  // "" until created
  RemoveOnInterrupt remove_on_interrupt_;
};

class SpillWriter {
 public:
  SpillWriter() = default;
  ~SpillWriter();  // closes without flushing (call Close() to keep what was written)
  SpillWriter(const SpillWriter&) = delete;
  SpillWriter& operator=(const SpillWriter&) = delete;

  // Creates (truncates) `path` with a buffer of `buffer_bytes`. IOError names the path.
  Status Open(const std::string& path, size_t buffer_bytes);
  Status Append(const void* data, size_t bytes);
  template <typename T>
  Status AppendValue(const T& value) {
    return Append(&value, sizeof(T));
  }
  // Flushes and closes; bytes_written() is then the file's size.
  Status Close();
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }

 private:
  Status Flush();

  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  size_t used_ = 0;
  uint64_t bytes_written_ = 0;
};

class SpillReader {
 public:
  SpillReader() = default;
  ~SpillReader();
  SpillReader(const SpillReader&) = delete;
  SpillReader& operator=(const SpillReader&) = delete;

  // Opens `path` with a buffer of at least `buffer_bytes`. IOError names the path.
  Status Open(const std::string& path, size_t buffer_bytes);
  // Sets *out to the next `bytes` bytes (valid until the next call). Corruption naming the file if
  // it ends first; IOError on a read error.
  Status Read(size_t bytes, std::string_view* out);
  template <typename T>
  Status ReadValue(T* value) {
    std::string_view v;
    SKIFF_RETURN_IF_ERROR(Read(sizeof(T), &v));
    std::memcpy(value, v.data(), sizeof(T));
    return Status::Ok();
  }
  const std::string& path() const { return path_; }

 private:
  Status Fill(size_t need);  // makes at least `need` bytes available unless the file ends

  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
};

}  // namespace skiff::convert
