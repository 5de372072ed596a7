#include "skiff/train/metrics_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>

#include "skiff/io/atomic_file.h"
#include "skiff/io/write_path.h"

namespace skiff::train {

using nlohmann::json;

Status DropMetricsFrom(const std::string& path, int64_t epoch) {
  std::ifstream in(path);
  if (!in) return Status::Ok();
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("epoch") && j["epoch"].is_number_integer() &&
        j["epoch"].get<int64_t>() >= epoch) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!dropped) return Status::Ok();
  return io::WriteFileAtomic(path, {kept});
}

MetricsFile::~MetricsFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status MetricsFile::Open(const std::string& path, int64_t next_epoch) {
  SKIFF_CHECK(fd_ < 0);
  if (path.empty()) return Status::Ok();
  if (next_epoch > 0) SKIFF_RETURN_IF_ERROR(DropMetricsFrom(path, next_epoch));
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (next_epoch > 0 ? O_APPEND : O_TRUNC);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) return Status::FromErrno(errno, "open metrics file " + path);
  path_ = path;
  return Status::Ok();
}

Status MetricsFile::Append(const std::string& json_line) {
  if (fd_ < 0) return Status::Ok();
  const std::string line = json_line + "\n";
  return io::WriteAll(fd_, line.data(), line.size(), "metrics file " + path_);
}

}  // namespace skiff::train
