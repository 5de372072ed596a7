#include "skiff/log.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace skiff {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_out_mu;
const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "?";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) < g_level.load()) return;
  std::lock_guard<std::mutex> lock(g_out_mu);
  std::fprintf(stderr, "skiff: %s: %.*s\n", LevelName(level), static_cast<int>(message.size()),
               message.data());
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof(buf), "%.2f %s", v, kUnits[u]);
  return buf;
}

std::string FormatCount(double count) {
  char buf[32];
  if (count >= 1e9) std::snprintf(buf, sizeof(buf), "%.2fG", count / 1e9);
  else if (count >= 1e6) std::snprintf(buf, sizeof(buf), "%.2fM", count / 1e6);
  else if (count >= 1e3) std::snprintf(buf, sizeof(buf), "%.1fk", count / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", count);
  return buf;
}

std::string FormatSeconds(double s) {
  char buf[32];
  if (!std::isfinite(s)) return "?";
  if (s < 60) std::snprintf(buf, sizeof(buf), "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof(buf), "%dm %02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof(buf), "%dh %02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return buf;
}

bool ParseBytes(std::string_view text, uint64_t* bytes) {
  std::string t(text);
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || errno != 0 || v < 0 || !std::isfinite(v)) return false;
  std::string suffix(end);
  for (auto& c : suffix) c = static_cast<char>(std::tolower(c));
  double mult = 1;
  if (suffix.empty() || suffix == "b") mult = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") mult = 1024.0;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") mult = 1024.0 * 1024;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") mult = 1024.0 * 1024 * 1024;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else return false;
  *bytes = static_cast<uint64_t>(v * mult);
  return true;
}

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
  std::lock_guard<std::mutex> lock(mu_);
  done_ += delta;
  MaybePrint(false);
}

void Progress::Set(uint64_t done) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = done;
  MaybePrint(false);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> out_lock(g_out_mu);
  if (tty) {
    std::fprintf(stderr, "\r\033[K%s%s", line.str().c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.str().c_str());
  }
  printed_any_ = true;
}

uint64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      uint64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace skiff
