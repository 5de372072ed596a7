// Test helpers: write text inputs for the converters, plain or gzip-compressed.
#pragma once

#include <zlib.h>

#include <fstream>
#include <string>

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

}  // namespace skiff::testing
