// Why a path cannot be opened, in the OS's words: "does not exist" only when it does not. A
// symbolic link loop (ELOOP), a file in place of a directory on the way (ENOTDIR) or a permission
// problem (EACCES) are reported as the OS names them, not as a missing file.
//
// Thread safety: a free function without state.
#pragma once

#include <string>

#include "skiff/status.h"

namespace skiff::io {

// Status of stat(2) on `path`: OK when it succeeds; NotFound "<what> <path> does not exist" for
// ENOENT; otherwise Status::FromErrno(errno, "<what> <path>") (e.g. "input x: Too many levels of
// symbolic links").
Status StatPath(const std::string& what, const std::string& path);

}  // namespace skiff::io
