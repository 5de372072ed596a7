// The OpenBLAS kernel choice (kernels/cpu/blas_core.h): a kernel set is named only for OpenBLAS's
// Prescott fallback on a CPU with AVX2, and never over an OPENBLAS_CORETYPE already set.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "kernels/cpu/blas_core.h"

using namespace skiff;

namespace {

// Sets (or with nullopt unsets) OPENBLAS_CORETYPE for a scope, restoring it after.
class CoreTypeVariable {
 public:
  explicit CoreTypeVariable(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("OPENBLAS_CORETYPE")) saved_ = old;
    if (value.has_value()) {
      setenv("OPENBLAS_CORETYPE", value->c_str(), 1);
    } else {
      unsetenv("OPENBLAS_CORETYPE");
    }
  }
  ~CoreTypeVariable() {
    if (saved_.has_value()) {
      setenv("OPENBLAS_CORETYPE", saved_->c_str(), 1);
    } else {
      unsetenv("OPENBLAS_CORETYPE");
    }
  }

 private:
  std::optional<std::string> saved_;
};

}  // namespace

TEST_CASE("BetterBlasCore keeps an OPENBLAS_CORETYPE that is set") {
  const CoreTypeVariable set(std::string("Haswell"));
  CHECK(cpu::BetterBlasCore().empty());
  CHECK(cpu::BlasDescription().find("(OPENBLAS_CORETYPE=Haswell)") != std::string::npos);
}

TEST_CASE("BetterBlasCore names a kernel set only for OpenBLAS's Prescott fallback") {
  const CoreTypeVariable unset(std::nullopt);
  const std::string core = cpu::BetterBlasCore();
  const std::string blas = cpu::BlasDescription();
  CAPTURE(blas);
  CAPTURE(core);
  CHECK((core.empty() || core == "SkylakeX" || core == "Haswell"));
  if (blas.find("Prescott kernels") == std::string::npos) CHECK(core.empty());
  __builtin_cpu_init();
  if (blas.find("Prescott kernels") != std::string::npos && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma")) {
    CHECK(!core.empty());
  }
}
