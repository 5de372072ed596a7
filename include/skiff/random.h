// Small, portable pseudo-random generators with fully specified output, so that datasets, splits
// and partitions drawn from a seed are byte-identical on every platform and standard library
// (std::shuffle and the std:: distributions are not specified bit-for-bit across implementations).
//
// Thread safety: values; one generator per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace skiff {

// The golden-ratio increment of SplitMix64 (2^64 / phi, odd).
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// SplitMix64's output function (Stafford's "Mix13"): a bijective 64-bit mixer. Constexpr, so it
// also compiles for CUDA device code.
inline constexpr uint64_t SplitMixFinalize(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// SplitMix64 finaliser of x + kGoldenGamma: a bijective 64-bit mixer. Also used to derive
// independent streams: Mix(seed ^ Mix(stream)) gives well-separated generator states.
inline constexpr uint64_t Mix64(uint64_t x) { return SplitMixFinalize(x + kGoldenGamma); }

// The SplitMix64 generator's step: returns Mix64(state) and advances the state.
inline constexpr uint64_t SplitMix64Next(uint64_t& state) {
  const uint64_t out = Mix64(state);
  state += kGoldenGamma;
  return out;
}

// Hash of (seed, stream, index): a counter-based random value, independent of evaluation order.
inline constexpr uint64_t HashKey(uint64_t seed, uint64_t stream, uint64_t index) {
  return Mix64(Mix64(seed ^ Mix64(stream)) ^ index);
}

// xoshiro256** (Blackman & Vigna), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) {
      x += kGoldenGamma;
      s = Mix64(x);
    }
  }
  // The generator whose four state words are the SplitMix64 outputs from `state`
  // (SplitMix64Next): Rng(seed) is FromSplitMix(seed + 0x9e3779b97f4a7c15).
  static Rng FromSplitMix(uint64_t state) {
    Rng rng(0);
    for (auto& s : rng.s_) s = SplitMix64Next(state);
    return rng;
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform double in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift with rejection; unbiased).
  uint64_t Below(uint64_t n) {
    uint64_t x = Next();
    __uint128_t m = static_cast<__uint128_t>(x) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        x = Next();
        m = static_cast<__uint128_t>(x) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Approximately standard normal: the sum of four 16-bit uniforms, centred and scaled to unit
  // variance (Irwin-Hall, n=4). Bounded at +-3.46; one generator call per value.
  float Normalish() {
    const uint64_t x = Next();
    const uint32_t sum = static_cast<uint32_t>(x & 0xffff) +
                         static_cast<uint32_t>((x >> 16) & 0xffff) +
                         static_cast<uint32_t>((x >> 32) & 0xffff) + static_cast<uint32_t>(x >> 48);
    // Mean 2 * 65535, variance 4 * (65536^2 - 1) / 12.
    constexpr float kScale = 1.0f / 37837.227f;  // 1 / sqrt(4 * (65536^2 - 1) / 12)
    return (static_cast<float>(sum) - 131070.0f) * kScale;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Fisher-Yates shuffle with a fully specified sequence of draws.
template <typename T>
void Shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.Below(i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace skiff
