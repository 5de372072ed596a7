// Progress of a long-running step on stderr: a single updating line on a terminal (rate and ETA)
// and, when stderr is not a terminal, one line every few seconds, so CI logs stay readable.
// Silent below LogLevel::kInfo.
//
// Thread safety: Add, Set and Finish may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "skiff/mutex.h"

namespace skiff {

// Progress of one step whose total (in `unit`s) may be known (total > 0) or not (total == 0).
// Update() is cheap and may be called from any thread; output is throttled.
class Progress {
 public:
  Progress(std::string label, uint64_t total, std::string unit);
  ~Progress();  // calls Finish() if not done
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Add(uint64_t delta);  // advance by delta units
  void Set(uint64_t done);   // set absolute progress
  void Finish();             // print the final line (count, time, rate)
  double ElapsedSeconds() const;

 private:
  void MaybePrint(bool final_line) SKIFF_REQUIRES(mu_);

  const std::string label_;
  const uint64_t total_;
  const std::string unit_;
  const std::chrono::steady_clock::time_point start_;
  Mutex mu_;
  uint64_t done_ SKIFF_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point last_print_ SKIFF_GUARDED_BY(mu_);
  bool finished_ SKIFF_GUARDED_BY(mu_) = false;
  bool printed_any_ SKIFF_GUARDED_BY(mu_) = false;
};

// A Progress only when asked for (library callers and tests stay quiet).
class OptionalProgress {
 public:
  OptionalProgress(bool on, const std::string& label, uint64_t total, const std::string& unit) {
    if (on) progress_.emplace(label, total, unit);
  }
  void Add(uint64_t delta) {
    if (progress_) progress_->Add(delta);
  }
  void Finish() {
    if (progress_) progress_->Finish();
  }

 private:
  std::optional<Progress> progress_;
};

}  // namespace skiff
