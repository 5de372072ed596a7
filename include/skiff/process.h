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
// Total physical memory, in bytes.
uint64_t PhysicalMemoryBytes();

}  // namespace skiff
