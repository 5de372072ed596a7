#include "skiff/log.h"

#include <atomic>
#include <cstdio>

#include "skiff/mutex.h"

namespace skiff {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}
}  // namespace

Mutex& StderrMutex() {
  static Mutex mu;
  return mu;
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) < g_level.load()) return;
  MutexLock lock(&StderrMutex());
  std::fprintf(stderr, "skiff: %s: %.*s\n", LevelName(level), static_cast<int>(message.size()),
               message.data());
}

}  // namespace skiff
