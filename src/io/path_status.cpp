#include "skiff/io/path_status.h"

#include <errno.h>
#include <sys/stat.h>

namespace skiff::io {

Status StatPath(const std::string& what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return Status::Ok();
  const int err = errno;
  if (err == ENOENT) return Status::NotFound(what + " " + path + " does not exist");
  return Status::FromErrno(err, what + " " + path);
}

}  // namespace skiff::io
