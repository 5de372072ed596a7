#include "skiff/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

namespace skiff::io {

Status WriteFileAtomic(const std::string& path, std::initializer_list<std::string_view> parts) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  Status st;
  for (std::string_view part : parts) {
    size_t done = 0;
    while (st.ok() && done < part.size()) {
      const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        st = Status::FromErrno(errno, "write " + tmp);
      } else {
        done += static_cast<size_t>(n);
      }
    }
  }
  if (st.ok() && ::fsync(fd) != 0) st = Status::FromErrno(errno, "fsync " + tmp);
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno(errno, "close " + tmp);
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status::FromErrno(errno, "rename " + tmp + " to " + path);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace skiff::io
