#include "kernels/cpu/blas_core.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

// OpenBLAS's extension, declared weak so a build against another CBLAS still links.
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace skiff::cpu {

std::string BlasDescription() {
  if (openblas_get_corename == nullptr) return "CBLAS";
  const char* core = openblas_get_corename();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return std::string("OpenBLAS, ") + (core != nullptr ? core : "unknown") + " kernels" +
         (forced != nullptr ? std::string(" (OPENBLAS_CORETYPE=") + forced + ")" : "");
}

std::string BetterBlasCore() {
  if (openblas_get_corename == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  const char* core = openblas_get_corename();
  if (core == nullptr || std::strcmp(core, "Prescott") != 0) return "";
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd");
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void RestartWithBlasCoreIfNeeded(char** argv) {
  const std::string core = BetterBlasCore();
  if (core.empty()) return;
  if (setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // execv failed: go on with OpenBLAS's own choice
}

}  // namespace skiff::cpu
