// Facts about this process and machine that memory budgets are checked against.
//
// Thread safety: may be called from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace skiff {

// Peak resident set size of this process, in bytes (from /proc/self/status VmHWM).
uint64_t PeakRssBytes();
// Resident set size of this process now, in bytes (VmRSS).
uint64_t CurrentRssBytes();
// The resident set by kind, in bytes (/proc/self/status RssAnon, RssFile, RssShmem): heap, stacks
// and other private memory; pages of mapped files (the executable and its libraries); shared
// memory.
struct RssParts {
  uint64_t anonymous = 0;
  uint64_t file = 0;
  uint64_t shared = 0;
};
RssParts CurrentRssParts();
// Resident bytes of the file-backed mappings whose file name (the last component of the mapped
// path) starts with one of `prefixes`, from /proc/self/smaps: the pages of those files this
// process has touched and that are still resident. 0 when nothing matches or smaps is unreadable.
uint64_t MappedFileRssBytes(std::span<const std::string_view> prefixes);
// Total physical memory, in bytes.
uint64_t PhysicalMemoryBytes();

}  // namespace skiff
