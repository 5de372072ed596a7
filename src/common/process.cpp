#include "skiff/process.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace skiff {

namespace {

// The "Key: N kB" lines of /proc/self/status named in `wanted`, in bytes, in one read of the file
// (0 for a key that is absent).
template <size_t N>
std::array<uint64_t, N> StatusBytes(const std::array<std::string_view, N>& wanted) {
  std::array<uint64_t, N> bytes{};
  std::ifstream in("/proc/self/status");
  std::string key;
  size_t found = 0;
  while (found < N && in >> key) {
    const auto it = std::find(wanted.begin(), wanted.end(), key);
    if (it != wanted.end()) {
      uint64_t kb = 0;
      in >> kb;
      bytes[static_cast<size_t>(it - wanted.begin())] = kb * 1024;
      ++found;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return bytes;
}

uint64_t StatusBytes(std::string_view wanted) {
  return StatusBytes(std::array<std::string_view, 1>{wanted})[0];
}

}  // namespace

uint64_t PeakRssBytes() { return StatusBytes("VmHWM:"); }
uint64_t CurrentRssBytes() { return StatusBytes("VmRSS:"); }

RssParts CurrentRssParts() {
  const auto bytes =
      StatusBytes(std::array<std::string_view, 3>{"RssAnon:", "RssFile:", "RssShmem:"});
  return {.anonymous = bytes[0], .file = bytes[1], .shared = bytes[2]};
}

uint64_t MappedFileRssBytes(std::span<const std::string_view> prefixes) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool matching = false;  // the mapping whose fields follow is one of the files asked for
  uint64_t bytes = 0;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string_view first = std::string_view(line).substr(0, space);
    if (!first.empty() && first.back() == ':') {  // a field of the current mapping
      if (matching && first == "Rss:") {
        bytes += std::strtoull(line.c_str() + space, nullptr, 10) * 1024;
      }
      continue;
    }
    // A mapping's header: "start-end perms offset dev inode [path]"; a file's path has a '/'.
    const size_t slash = line.rfind('/');
    const std::string_view name =
        slash == std::string::npos ? std::string_view() : std::string_view(line).substr(slash + 1);
    matching =
        !name.empty() && std::any_of(prefixes.begin(), prefixes.end(),
                                     [&](std::string_view p) { return name.starts_with(p); });
  }
  return bytes;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace skiff
