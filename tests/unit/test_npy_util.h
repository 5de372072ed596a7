// Helpers for tests that need real .npy bytes and .npz archives, built by hand.
#pragma once

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace skiff::testing {
// The bytes of a version-1.0 .npy file, padded like numpy (header + prefix a multiple of 64).
inline std::string NpyBytes(const std::string& descr, const std::string& shape,
                            const std::string& data, bool fortran = false, int major = 1) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  const size_t prefix = major == 1 ? 10 : 12;
  size_t total = prefix + dict.size() + 1;
  const size_t padded = (total + 63) / 64 * 64;
  dict += std::string(padded - total, ' ');
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const auto len = static_cast<uint32_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + dict + data;
}

template <typename T>
inline std::string Raw(const std::vector<T>& values, bool big_endian = false) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  if (big_endian) {
    for (size_t i = 0; i < values.size(); ++i) {
      std::reverse(out.begin() + static_cast<ptrdiff_t>(i * sizeof(T)),
                   out.begin() + static_cast<ptrdiff_t>((i + 1) * sizeof(T)));
    }
  }
  return out;
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Writes a .npz (zip) with the given entries; `deflate` compresses them.
inline void WriteNpz(const std::string& path, const std::map<std::string, std::string>& entries,
                     bool deflate) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  REQUIRE(z != nullptr);
  for (const auto& [name, bytes] : entries) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    REQUIRE(src != nullptr);
    const zip_int64_t idx = zip_file_add(z, (name + ".npy").c_str(), src, ZIP_FL_OVERWRITE);
    REQUIRE(idx >= 0);
    REQUIRE(zip_set_file_compression(z, static_cast<zip_uint64_t>(idx),
                                     deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0);
  }
  REQUIRE(zip_close(z) == 0);  // the buffers must live until here
}

}  // namespace skiff::testing
