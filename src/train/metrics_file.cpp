#include "skiff/train/metrics_file.h"

#include <nlohmann/json.hpp>

#include "skiff/io/atomic_file.h"

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

Status OpenMetrics(const std::string& path, int64_t next_epoch, std::ofstream* metrics) {
  if (path.empty()) return Status::Ok();
  if (next_epoch > 0) SKIFF_RETURN_IF_ERROR(DropMetricsFrom(path, next_epoch));
  metrics->open(path, next_epoch > 0 ? std::ios::app : std::ios::trunc);
  if (!*metrics) return Status::IOError("cannot open metrics file " + path);
  return Status::Ok();
}

Status WriteMetricsLine(const std::string& path, const std::string& json_line,
                        std::ofstream* metrics) {
  if (!metrics->is_open()) return Status::Ok();
  *metrics << json_line << "\n";
  metrics->flush();
  if (!*metrics) return Status::IOError("writing metrics file " + path);
  return Status::Ok();
}

}  // namespace skiff::train
