#include "skiff/progress.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "skiff/log.h"
#include "skiff/mutex.h"
#include "skiff/units.h"

namespace skiff {

Progress::Progress(std::string label, uint64_t total, std::string unit)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() { Finish(); }

double Progress::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Add(uint64_t delta) {
  MutexLock lock(&mu_);
  done_ += delta;
  MaybePrint(false);
}

void Progress::Set(uint64_t done) {
  MutexLock lock(&mu_);
  done_ = done;
  MaybePrint(false);
}

void Progress::Finish() {
  MutexLock lock(&mu_);
  if (finished_) return;
  finished_ = true;
  if (GetLogLevel() > LogLevel::kInfo) return;
  MaybePrint(true);
}

void Progress::MaybePrint(bool final_line) {
  if (GetLogLevel() > LogLevel::kInfo) return;
  const auto now = std::chrono::steady_clock::now();
  static const bool tty = isatty(STDERR_FILENO);
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (!final_line && since < (tty ? 0.25 : 5.0)) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? done_ / elapsed : 0;
  std::ostringstream line;
  line << label_ << ": " << FormatCount(static_cast<double>(done_));
  if (total_ > 0) {
    line << "/" << FormatCount(static_cast<double>(total_)) << " " << unit_;
    char pct[16];
    std::snprintf(pct, sizeof(pct), " (%.1f%%)", 100.0 * done_ / total_);
    line << pct;
  } else {
    line << " " << unit_;
  }
  if (rate < 10) {  // slow work (a few batches a second or less) would otherwise print "0"
    char slow[32];
    std::snprintf(slow, sizeof(slow), "%.2f", rate);
    line << ", " << slow << " " << unit_ << "/s";
  } else {
    line << ", " << FormatCount(rate) << " " << unit_ << "/s";
  }
  if (final_line) {
    line << ", " << FormatSeconds(elapsed);
  } else if (total_ > 0 && rate > 0 && done_ <= total_) {
    line << ", ETA " << FormatSeconds((total_ - done_) / rate);
  }
  MutexLock out_lock(&StderrMutex());
  if (tty) {
    std::fprintf(stderr, "\r\033[K%s%s", line.str().c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.str().c_str());
  }
  printed_any_ = true;
}

}  // namespace skiff
