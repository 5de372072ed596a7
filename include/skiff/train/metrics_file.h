// The metrics file of a training run (--metrics): one JSON object per line, each with an integer
// "epoch". A resumed run continues the file of the run it resumes.
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "skiff/status.h"

namespace skiff::train {

// Rewrites the metrics file at `path` without the lines of epochs >= `epoch` (written after a
// checkpoint by a run that then stopped), atomically. A missing file is fine; a line that is not
// such an object is kept.
Status DropMetricsFrom(const std::string& path, int64_t epoch);

// Opens `path` for the epochs from `next_epoch` on: truncated for a new run (next_epoch 0),
// continued without the lines of epochs >= next_epoch for a resumed one, so that each epoch
// appears once. Leaves *metrics closed when `path` is empty. IOError naming the file.
Status OpenMetrics(const std::string& path, int64_t next_epoch, std::ofstream* metrics);

// Appends one line and flushes it. IOError naming the file.
Status WriteMetricsLine(const std::string& path, const std::string& json, std::ofstream* metrics);

}  // namespace skiff::train
