// StageStats: where one pipeline stage spent its time.
//
// busy_seconds: time the stage worked on items; stall_seconds: time it waited on a queue (starved
// for input or blocked by a full output queue) or on I/O it could not overlap; items: items it
// finished. A stage whose busy time is close to the epoch's wall time bounds training; a stage that
// mostly stalls is waiting on a neighbour. Stages with several worker threads add their threads'
// times (so busy_seconds may exceed wall time).
//
// StageTimer measures one thread's share: it starts at construction, and everything not recorded as
// stall (AddStall / a StallScope) counts as busy when Finish() is called.
//
// Thread safety: StageStats is a value; StageCounters may be added to from many threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace skiff::pipeline {

struct StageStats {
  std::string name;
  double busy_seconds = 0;
  double stall_seconds = 0;
  int64_t items = 0;
  int threads = 1;
};

// Thread-safe accumulator behind one stage's StageStats.
class StageCounters {
 public:
  StageCounters(std::string name, int threads) : name_(std::move(name)), threads_(threads) {}
  void AddBusy(std::chrono::nanoseconds d) {
    busy_ns_.fetch_add(d.count(), std::memory_order_relaxed);
  }
  void AddStall(std::chrono::nanoseconds d) {
    stall_ns_.fetch_add(d.count(), std::memory_order_relaxed);
  }
  void AddItems(int64_t n) { items_.fetch_add(n, std::memory_order_relaxed); }
  StageStats Snapshot() const;
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  const int threads_;
  std::atomic<int64_t> busy_ns_{0};
  std::atomic<int64_t> stall_ns_{0};
  std::atomic<int64_t> items_{0};
};

// Times one thread of a stage. Not thread-safe: one per thread.
class StageTimer {
 public:
  explicit StageTimer(StageCounters* counters)
      : counters_(counters), start_(std::chrono::steady_clock::now()) {}
  ~StageTimer() { Finish(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  void AddStall(std::chrono::nanoseconds d) { stall_ += d; }
  // Adds (wall time - stall) to busy and the stall to stall; idempotent.
  void Finish();

 private:
  StageCounters* counters_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::nanoseconds stall_{0};
  bool finished_ = false;
};

// Records the lifetime of the scope as stall time of `timer` (nullptr: records nothing).
class StallScope {
 public:
  explicit StallScope(StageTimer* timer)
      : timer_(timer), start_(std::chrono::steady_clock::now()) {}
  ~StallScope() {
    if (timer_ != nullptr) timer_->AddStall(std::chrono::steady_clock::now() - start_);
  }
  StallScope(const StallScope&) = delete;
  StallScope& operator=(const StallScope&) = delete;

 private:
  StageTimer* timer_;
  std::chrono::steady_clock::time_point start_;
};

// "sample 3.2s busy / 0.4s stall (812 items, 2 threads)" per stage, one per line, and the stage
// with the largest busy time per thread named as the bound.
std::string FormatStageStats(const std::vector<StageStats>& stages, double wall_seconds);

}  // namespace skiff::pipeline
