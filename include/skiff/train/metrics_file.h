// The metrics file of a training run (--metrics): one JSON object per line, each with an integer
// "epoch". A resumed run continues the file of the run it resumes.
//
// Thread safety: a MetricsFile is used by one thread.
#pragma once

#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::train {

// Rewrites the metrics file at `path` without the lines of epochs >= `epoch` (written after a
// checkpoint by a run that then stopped), atomically. A missing file is fine; a line that is not
// such an object is kept.
Status DropMetricsFrom(const std::string& path, int64_t epoch);

class MetricsFile {
 public:
  MetricsFile() = default;
  ~MetricsFile();  // closes the file
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // Opens `path` for the epochs from `next_epoch` on: truncated for a new run (next_epoch 0),
  // continued without the lines of epochs >= next_epoch for a resumed one, so that each epoch
  // appears once. An empty `path`: no file, and Append does nothing. Errors name the file and the
  // OS's reason.
  Status Open(const std::string& path, int64_t next_epoch);
  // Appends one line (write(2) of the whole line). IOError, or ResourceExhausted on a full disk,
  // naming the file and the OS's reason.
  Status Append(const std::string& json_line);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace skiff::train
