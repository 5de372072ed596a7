#include "kernels/cpu/parallel.h"

#include <atomic>

// OpenBLAS's thread setter, declared weak so a build against another CBLAS still links.
extern "C" void openblas_set_num_threads(int num_threads) __attribute__((weak));

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
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(resolved);
}

int NumThreads() { return g_num_threads.load(std::memory_order_relaxed); }

}  // namespace skiff::cpu
