#include "skiff/process.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace skiff {

namespace {

// A "Key: N kB" line of /proc/self/status, in bytes (0 when absent).
uint64_t StatusBytes(const std::string& wanted) {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == wanted) {
      uint64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

}  // namespace

uint64_t PeakRssBytes() { return StatusBytes("VmHWM:"); }
uint64_t CurrentRssBytes() { return StatusBytes("VmRSS:"); }

RssParts CurrentRssParts() {
  return {.anonymous = StatusBytes("RssAnon:"),
          .file = StatusBytes("RssFile:"),
          .shared = StatusBytes("RssShmem:")};
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace skiff
