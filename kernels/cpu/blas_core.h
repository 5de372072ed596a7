// Which OpenBLAS kernels this CPU should run. OpenBLAS chooses its kernel set when it loads, from
// the CPU's family and model; the Debian 12 release (0.3.21) does not know CPUs newer than itself
// -- an Emerald Rapids Xeon (family 6, model 207) among them -- and falls back to its Prescott
// kernels (SSE3), which run sgemm at under half the speed of the AVX-512 kernels on the same CPU
// (BENCHMARKS.md, "OpenBLAS's kernels"). The fallback is recognisable: Prescott on a CPU with
// AVX2. OpenBLAS takes another choice only from OPENBLAS_CORETYPE, read as it loads, so a program
// fixes it by restarting itself with that variable set (RestartWithBlasCoreIfNeeded).
//
// Thread safety: call at start-up, before any other thread exists.
#pragma once

#include <string>

namespace skiff::cpu {

// The BLAS behind cpu::Gemm, for logs: "OpenBLAS, <core> kernels" (the kernel set OpenBLAS chose
// for this CPU, or the one forced by OPENBLAS_CORETYPE, which is then named too), or "CBLAS" for
// another implementation.
std::string BlasDescription();

// The kernel set to name in OPENBLAS_CORETYPE: "SkylakeX" (AVX-512: its single-precision kernels
// are also those of the later Cooperlake set, a name 0.3.21 does not take) or "Haswell" (AVX2 and
// FMA) when OpenBLAS fell back to Prescott on a CPU that has those; "" when its choice stands (it
// knew the CPU, OPENBLAS_CORETYPE is set -- by the user, or by an earlier restart -- or the BLAS is
// not OpenBLAS).
std::string BetterBlasCore();

// When BetterBlasCore() names a kernel set, sets OPENBLAS_CORETYPE to it and replaces the process
// with a fresh run of the same executable and arguments (/proc/self/exe), which then loads
// OpenBLAS with it. Returns only when nothing needed doing or the restart failed (the run goes on
// with OpenBLAS's choice; the variable is then unset again).
void RestartWithBlasCoreIfNeeded(char** argv);

}  // namespace skiff::cpu
