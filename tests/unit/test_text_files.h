// Test helpers: write the converters' inputs (text, plain or gzip-compressed; .npy arrays) and
// read files back whole.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace skiff::testing {

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline void WriteGz(const std::string& path, const std::string& text) {
  gzFile gz = gzopen(path.c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())) ==
          static_cast<int>(text.size()));
  REQUIRE(gzclose(gz) == Z_OK);
}

// Writes a little-endian .npy (format 1.0) with the given dtype descr and shape.
inline void WriteNpy(const std::string& path, const std::string& descr,
                     const std::vector<int64_t>& shape, const void* data, size_t bytes) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(dict.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << dict;
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// The whole file's bytes ("" if it cannot be read).
inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace skiff::testing
