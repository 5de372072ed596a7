#include "kernels/cpu/parallel.h"

#include <atomic>

namespace skiff::cpu {
namespace {
int HardwareThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}
std::atomic<int> g_num_threads{HardwareThreads()};
}  // namespace

void SetNumThreads(int threads) {
  const int resolved = threads < 1 ? HardwareThreads() : threads;
  g_num_threads.store(resolved, std::memory_order_relaxed);
}

int NumThreads() { return g_num_threads.load(std::memory_order_relaxed); }

}  // namespace skiff::cpu
