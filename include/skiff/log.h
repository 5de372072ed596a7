// Logging and progress output for long-running commands.
//
// Log lines go to stderr as "skiff: <level>: message". Progress shows a single updating line on a
// terminal (rate and ETA) and, when stderr is not a terminal, one line every few seconds, so CI logs
// stay readable. Thread safety: all functions may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace skiff {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void Log(LogLevel level, std::string_view message);
inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }
inline void LogDebug(std::string_view m) { Log(LogLevel::kDebug, m); }

// "1.50 GiB", "312.0 KiB"
std::string FormatBytes(uint64_t bytes);
// "1.2M", "34.5k"
std::string FormatCount(double count);
// "1m 03s", "2.5s"
std::string FormatSeconds(double seconds);

// Parses "4GiB", "512MiB", "1.5G", "1000000" (bytes) into bytes. Returns false on malformed input.
bool ParseBytes(std::string_view text, uint64_t* bytes);

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
  void MaybePrint(bool final_line);

  const std::string label_;
  const uint64_t total_;
  const std::string unit_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  uint64_t done_ = 0;                                   // guarded by mu_
  std::chrono::steady_clock::time_point last_print_;   // guarded by mu_
  bool finished_ = false;                              // guarded by mu_
  bool printed_any_ = false;                           // guarded by mu_
};

// Peak resident set size of this process, in bytes (from /proc/self/status VmHWM).
uint64_t PeakRssBytes();
// Total physical memory, in bytes.
uint64_t PhysicalMemoryBytes();

}  // namespace skiff
