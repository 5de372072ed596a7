// CheckFreeSpace: refuses to start writing what will not fit, before any of it is written.
//
// Thread safety: a plain function.
#pragma once

#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::io {

// ResourceExhausted -- "<what> needs about 49.0 GiB, but its file system has 12.1 GiB free" (name
// the output in `what`) -- when the file system holding `dir` has fewer than `need_bytes` available
// to this user. OK when it has, or when its free space cannot be read (the writes then report what
// happens).
Status CheckFreeSpace(const std::string& dir, uint64_t need_bytes, const std::string& what);

}  // namespace skiff::io
