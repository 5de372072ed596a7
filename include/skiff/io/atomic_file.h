// Whole-file atomic writes: the bytes go to "<path>.tmp-<pid>", are fsync'ed, renamed over `path`,
// and the directory is fsync'ed, so a reader sees either the old file or the complete new one. A
// failed or interrupted write (skiff/interrupt.h) removes "<path>.tmp-<pid>".
//
// Thread safety: distinct paths may be written from distinct threads.
#pragma once

#include <string>
#include <string_view>

#include "skiff/status.h"

namespace skiff::io {

// Writes the concatenation of `parts`. IOError names the path on failure (the temp file is
// removed).
Status WriteFileAtomic(const std::string& path, std::initializer_list<std::string_view> parts);

}  // namespace skiff::io
