#include "skiff/io/npy_writer.h"

#include "skiff/io/atomic_file.h"

namespace skiff::io {

std::string NpyHeaderBytes(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // magic(6) + version(2) + header_len(2) + dict + padding + '\n' is a multiple of 64.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

namespace {
template <typename T>
Status WriteTyped(const std::string& path, const char* descr, const T* data,
                  const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  const std::string header = NpyHeaderBytes(descr, shape);
  return WriteFileAtomic(path, {header, std::string_view(reinterpret_cast<const char*>(data),
                                                         static_cast<size_t>(count) * sizeof(T))});
}
}  // namespace

Status WriteNpy(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  return WriteTyped(path, "<f4", data, shape);
}
Status WriteNpy(const std::string& path, const int32_t* data, const std::vector<int64_t>& shape) {
  return WriteTyped(path, "<i4", data, shape);
}
Status WriteNpy(const std::string& path, const int64_t* data, const std::vector<int64_t>& shape) {
  return WriteTyped(path, "<i8", data, shape);
}

}  // namespace skiff::io
