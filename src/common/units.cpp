#include "skiff/units.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace skiff {

namespace {
std::string FormatBytesRounded(uint64_t bytes, bool up) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    // Up: the next hundredth, so that the two decimals printed are never below the value.
    std::snprintf(buf, sizeof(buf), "%.2f %s", up ? std::ceil(v * 100) / 100 : v, kUnits[u]);
  }
  return buf;
}
}  // namespace

std::string FormatBytes(uint64_t bytes) { return FormatBytesRounded(bytes, false); }

std::string FormatBytesAtLeast(uint64_t bytes) { return FormatBytesRounded(bytes, true); }

std::string FormatCount(double count) {
  char buf[32];
  if (count >= 1e9)
    std::snprintf(buf, sizeof(buf), "%.2fG", count / 1e9);
  else if (count >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.2fM", count / 1e6);
  else if (count >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.1fk", count / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.0f", count);
  return buf;
}

std::string FormatSeconds(double s) {
  char buf[32];
  if (!std::isfinite(s)) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof(buf), "%.1fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof(buf), "%dm %02ds", int(s) / 60, int(s) % 60);
  else
    std::snprintf(buf, sizeof(buf), "%dh %02dm", int(s) / 3600, (int(s) % 3600) / 60);
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
  if (suffix.empty() || suffix == "b")
    mult = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib")
    mult = 1024.0;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    mult = 1024.0 * 1024;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    mult = 1024.0 * 1024 * 1024;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    return false;
  *bytes = static_cast<uint64_t>(v * mult);
  return true;
}

}  // namespace skiff
