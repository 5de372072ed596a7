// Writes NumPy .npy files (format version 1.0, little-endian, C order), atomically.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::io {

// The .npy header (magic, version, padded dict) for `descr` ("<f4", "<i4", "<i8") and `shape`.
std::string NpyHeaderBytes(const std::string& descr, const std::vector<int64_t>& shape);

// Writes an array of product(shape) elements from `data`. IOError names the path.
Status WriteNpy(const std::string& path, const float* data, const std::vector<int64_t>& shape);
Status WriteNpy(const std::string& path, const int32_t* data, const std::vector<int64_t>& shape);
Status WriteNpy(const std::string& path, const int64_t* data, const std::vector<int64_t>& shape);

}  // namespace skiff::io
