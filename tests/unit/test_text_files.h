// Test helpers: write the converters' inputs (text, plain or gzip-compressed; .npy arrays) and
// read files back whole.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
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

// An OGB node-property-prediction directory under `root` (raw/ and split/<split>/, every file
// gzip-compressed CSV as OGB ships it), with the given contents.
struct OgbFiles {
  std::string split = "time";
  std::string edges, num_nodes, features, labels, train, valid, test;
};
inline void WriteOgb(const std::string& root, const OgbFiles& f) {
  const std::string split = root + "/split/" + f.split;
  std::filesystem::create_directories(root + "/raw");
  std::filesystem::create_directories(split);
  WriteGz(root + "/raw/edge.csv.gz", f.edges);
  WriteGz(root + "/raw/num-node-list.csv.gz", f.num_nodes);
  WriteGz(root + "/raw/node-feat.csv.gz", f.features);
  WriteGz(root + "/raw/node-label.csv.gz", f.labels);
  WriteGz(split + "/train.csv.gz", f.train);
  WriteGz(split + "/valid.csv.gz", f.valid);
  WriteGz(split + "/test.csv.gz", f.test);
}

// The whole file's bytes ("" if it cannot be read).
inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace skiff::testing
