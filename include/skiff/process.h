// Facts about this process and machine that memory budgets are checked against.
//
// Thread safety: may be called from any thread.
#pragma once

#include <cstdint>

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
// Total physical memory, in bytes.
uint64_t PhysicalMemoryBytes();

}  // namespace skiff
