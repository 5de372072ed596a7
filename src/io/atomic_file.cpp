#include "skiff/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "skiff/interrupt.h"
#include "skiff/io/write_path.h"

namespace skiff::io {

Status WriteFileAtomic(const std::string& path, std::initializer_list<std::string_view> parts) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const RemoveOnInterrupt remove_if_interrupted(tmp);  // once renamed, nothing is left to remove
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  Status st;
  for (std::string_view part : parts) {
    if (st.ok()) st = WriteAll(fd, part.data(), part.size(), tmp);
  }
  if (st.ok()) st = Fsync(fd, tmp);
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno(errno, "close " + tmp);
  if (st.ok() && Rename(tmp, path) != 0) {
    st = Status::FromErrno(errno, "rename " + tmp + " to " + path);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  (void)FsyncPath(dir);  // the file is complete either way; this makes its name durable
  return Status::Ok();
}

}  // namespace skiff::io
