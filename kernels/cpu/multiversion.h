// SKIFF_CPU_MULTIVERSION: marks a hot CPU kernel loop to be compiled twice, for the x86-64
// baseline and for x86-64-v3 (AVX2, FMA), with the variant picked once at load time (GCC/Clang
// target_clones, an ifunc). The build targets the baseline ISA so binaries run anywhere; the loops
// that dominate a training step (dropout, CSR aggregation) still get 8-lane vectors on machines
// that have them. Results can differ in the last bits between variants (FMA contraction), never
// between runs or thread counts on one machine.
//
// Off under sanitizers (ifunc resolvers run before their runtime is set up) and on other ISAs.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__CUDACC__)
#define SKIFF_CPU_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SKIFF_CPU_MULTIVERSION
#endif
