#include "skiff/pipeline/stage_stats.h"

#include <cstdio>

namespace skiff::pipeline {

StageStats StageCounters::Snapshot() const {
  StageStats stats;
  stats.name = name_;
  stats.threads = threads_;
  stats.busy_seconds = static_cast<double>(busy_ns_.load()) * 1e-9;
  stats.stall_seconds = static_cast<double>(stall_ns_.load()) * 1e-9;
  stats.items = items_.load();
  return stats;
}

void StageTimer::Finish() {
  if (finished_) return;
  finished_ = true;
  const auto wall = std::chrono::steady_clock::now() - start_;
  const auto stall = std::min<std::chrono::nanoseconds>(stall_, wall);
  counters_->AddStall(stall);
  counters_->AddBusy(std::chrono::duration_cast<std::chrono::nanoseconds>(wall) - stall);
}

std::string FormatStageStats(const std::vector<StageStats>& stages, double wall_seconds) {
  std::string out;
  const StageStats* bound = nullptr;
  double bound_busy = -1;
  for (const StageStats& stage : stages) {
    char line[256];
    std::snprintf(line, sizeof(line), "  %-8s busy %8.3fs  stall %8.3fs  items %9lld  threads %d\n",
                  stage.name.c_str(), stage.busy_seconds, stage.stall_seconds,
                  static_cast<long long>(stage.items), stage.threads);
    out += line;
    const double per_thread = stage.busy_seconds / std::max(stage.threads, 1);
    if (per_thread > bound_busy) {
      bound_busy = per_thread;
      bound = &stage;
    }
  }
  if (bound != nullptr && wall_seconds > 0) {
    char line[160];
    std::snprintf(line, sizeof(line), "  bound by: %s (busy %.0f%% of %.3fs wall per thread)\n",
                  bound->name.c_str(), 100.0 * bound_busy / wall_seconds, wall_seconds);
    out += line;
  }
  return out;
}

}  // namespace skiff::pipeline
