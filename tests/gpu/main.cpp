// skiff_gpu_tests: compares every CUDA kernel with its CPU reference and gradient-checks the
// forward/backward pairs. Without a usable CUDA device it runs only the host-side argument checks
// (test cases named "host: ..."), then exits 77 ("skipped" for CTest) if they pass.
//
//   skiff_gpu_tests            correctness suite (doctest options work as usual)
//   skiff_gpu_tests --perf     only the benchmarks (test cases named "perf: ..."), which are
//                              skipped in a normal run
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/device.cuh"

int main(int argc, char** argv) {
  const skiff::Result<skiff::cuda::DeviceInfo> device = skiff::cuda::FirstDevice();
  if (!device.ok()) {
    std::fprintf(stderr, "skiff_gpu_tests: no CUDA device (%s); running host-side checks only\n",
                 device.status().ToString().c_str());
    std::vector<const char*> args = {argv[0], "--test-case=host:*", "--minimal=true"};
    doctest::Context context(static_cast<int>(args.size()), args.data());
    const int result = context.run();
    if (result != 0) return result;
    std::fprintf(stderr, "skiff_gpu_tests: no CUDA device, GPU tests skipped\n");
    return 77;
  }
  std::fprintf(stderr, "skiff_gpu_tests: %s (sm_%d%d, %d SMs, %.1f GiB, %.0f GB/s peak)\n",
               device->name.c_str(), device->sm_major, device->sm_minor, device->multiprocessors,
               device->global_memory_bytes / (1024.0 * 1024.0 * 1024.0),
               device->memory_bandwidth_gbs);

  std::vector<const char*> args;
  bool perf = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--perf") == 0) {
      perf = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (perf) {
    args.push_back("--test-case=perf:*");
    args.push_back("--no-skip=true");
  }
  doctest::Context context(static_cast<int>(args.size()), args.data());
  return context.run();
}
