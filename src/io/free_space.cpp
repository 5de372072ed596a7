#include "skiff/io/free_space.h"

#include <sys/statvfs.h>

#include "skiff/log.h"
#include "skiff/units.h"

namespace skiff::io {

Status CheckFreeSpace(const std::string& dir, uint64_t need_bytes, const std::string& what) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return Status::Ok();
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes >= need_bytes) return Status::Ok();
  return Status::ResourceExhausted(what + " needs about " + FormatBytes(need_bytes) +
                                   ", but its file system has " + FormatBytes(free_bytes) +
                                   " free");
}

}  // namespace skiff::io
