// Logging for commands and the library: lines go to stderr as "skiff: <level>: message", filtered
// by one process-wide level. (Progress lines: skiff/progress.h; byte sizes and durations:
// skiff/units.h.)
//
// Thread safety: all functions may be called from any thread.
#pragma once

#include <string_view>

#include "skiff/mutex.h"

namespace skiff {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void Log(LogLevel level, std::string_view message);
inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }
inline void LogDebug(std::string_view m) { Log(LogLevel::kDebug, m); }

// Held by every writer of whole lines to stderr (log and progress lines), so they never interleave.
Mutex& StderrMutex();

}  // namespace skiff
