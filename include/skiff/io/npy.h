// NumPy .npy files and .npz archives (zip of .npy, stored or deflated), read streaming.
//
// Supports the standard dtypes (bool, int8..int64, uint8..uint64, float16/32/64), either byte order,
// C order (Fortran order is rejected with a clear error, except for 1-D arrays where it is the same).
// Values are converted on read to float32 or int64. Every error names the file (and the archive
// entry) and what was expected: bad magic, malformed header, truncated data, wrong dtype or shape.
//
// Thread safety: a reader is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::io {

enum class NpyType { kBool, kInt8, kUInt8, kInt16, kUInt16, kInt32, kUInt32, kInt64, kUInt64,
                     kFloat16, kFloat32, kFloat64 };

struct NpyHeader {
  NpyType type = NpyType::kFloat32;
  std::string descr;           // as written, e.g. "<f4"
  size_t item_bytes = 4;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;  // () is a scalar
  int64_t num_elements() const;
  bool is_integer() const;     // bool and integer types
};

class NpyReader {
 public:
  virtual ~NpyReader() = default;
  // Opens a .npy file.
  static Result<std::unique_ptr<NpyReader>> OpenFile(const std::string& path);
  // Opens entry `name` ("labels" or "labels.npy") of a .npz archive.
  static Result<std::unique_ptr<NpyReader>> OpenNpzEntry(const std::string& npz_path,
                                                         const std::string& name);

  const NpyHeader& header() const { return header_; }
  const std::string& source() const { return source_; }  // "file.npz:labels.npy", for errors
  int64_t elements_read() const { return elements_read_; }

  // Reads the next `count` elements (in C order), converted. Corruption if the data ends early,
  // or, once the last element is read, if bytes follow it or a .npz entry's CRC-32 does not
  // match; InvalidArgument if integers are requested from a float array with non-integral values.
  // (Opening refuses a file or entry whose size differs from what its header's shape needs.)
  Status ReadFloat(int64_t count, float* dst);
  Status ReadInt64(int64_t count, int64_t* dst);

 protected:
  NpyReader(std::string source, NpyHeader header) : source_(std::move(source)), header_(std::move(header)) {}
  // Reads exactly `bytes` raw bytes of the data section.
  virtual Status ReadRaw(void* dst, size_t bytes) = 0;
  // Called once the last element is read: Corruption when data follows it, or when the source's
  // own check fails (a .npz entry's CRC-32).
  virtual Status CheckEnd() { return Status::Ok(); }

  std::string source_;
  NpyHeader header_;
  int64_t elements_read_ = 0;
};

// Names of the entries of a .npz archive, without the ".npy" suffix.
Result<std::vector<std::string>> ListNpzEntries(const std::string& npz_path);

}  // namespace skiff::io
