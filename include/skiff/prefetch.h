// PrefetchRead: asks the CPU to start loading the cache line at `address` (a hint: no fault, no
// effect on results). For loops over data larger than the caches whose next addresses are known a
// few iterations ahead (the sampler's ID map and adjacency rows), so that several misses are in
// flight at once instead of one after another.
//
// An asm statement on x86-64: GCC 12 dropped __builtin_prefetch from the sampler's loops.
#pragma once

namespace skiff {

inline void PrefetchRead(const void* address) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address);
#endif
}

}  // namespace skiff
