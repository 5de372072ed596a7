#include "skiff/format/content_checks.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "skiff/random.h"

namespace skiff::format {

Status CheckOffsets(const std::string& path, std::span<const int64_t> values, int64_t first,
                    int64_t previous, int64_t num_nodes, int64_t num_edges) {
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t at = first + static_cast<int64_t>(i);
    const int64_t v = values[i];
    auto entry = [&] { return path + ": entry " + std::to_string(at) + " = " + std::to_string(v); };
    if (at == 0 && v != 0) return Status::Corruption(entry() + "; the first offset must be 0");
    if (v < 0 || v > num_edges) {
      return Status::Corruption(
          entry() + " (a bound of node " + std::to_string(std::min(at, num_nodes - 1)) +
          "'s row), outside [0, num_edges = " + std::to_string(num_edges) + "]");
    }
    if (at > 0 && v < previous) {
      return Status::Corruption(path + ": offsets of node " + std::to_string(at - 1) +
                                " decrease (entry " + std::to_string(at - 1) + " = " +
                                std::to_string(previous) + ", entry " + std::to_string(at) + " = " +
                                std::to_string(v) + ")");
    }
    if (at == num_nodes && v != num_edges) {
      return Status::Corruption(entry() + ", the end of the last row, but num_edges is " +
                                std::to_string(num_edges));
    }
    previous = v;
  }
  return Status::Ok();
}

namespace {

// The scans run on every block the out-of-core pool reads (several times the dataset per epoch), so
// they test eight bytes at a time with integer operations (SWAR) and branch once per span: at -O2
// the compiler leaves a loop over elements scalar (3.5 GB/s; this: 8 GB/s, memory bound). Each
// lane's test sets the lane's top bit; a bad value's index is then found by a plain loop.
constexpr size_t kWordBytes = 8;

// OR of `lanes(word)` over the whole 8-byte words of `bytes` bytes at `data`, masked by `top`.
template <typename Lanes>
bool AnyLaneTopBit(const void* data, size_t bytes, uint64_t top, Lanes lanes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t acc[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 * kWordBytes <= bytes; i += 4 * kWordBytes) {
    for (size_t k = 0; k < 4; ++k) {
      uint64_t word;
      std::memcpy(&word, p + i + k * kWordBytes, kWordBytes);
      acc[k] |= lanes(word);
    }
  }
  for (; i + kWordBytes <= bytes; i += kWordBytes) {
    uint64_t word;
    std::memcpy(&word, p + i, kWordBytes);
    acc[0] |= lanes(word);
  }
  return ((acc[0] | acc[1] | acc[2] | acc[3]) & top) != 0;
}

template <typename T, typename Bad>
int64_t FirstBad(std::span<const T> values, Bad bad) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (bad(values[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

// Whether an element after the whole words (left by an odd length) is bad.
template <typename T, typename Bad>
bool TailBad(std::span<const T> values, Bad bad) {
  const size_t whole = values.size_bytes() / kWordBytes * kWordBytes / sizeof(T);
  return FirstBad(values.subspan(whole), bad) >= 0;
}

}  // namespace

int64_t FirstIdOutOfRange(std::span<const int32_t> ids, int64_t num_nodes) {
  auto bad = [num_nodes](int32_t v) { return v < 0 || v >= num_nodes; };
  if (num_nodes > (int64_t{1} << 31)) return FirstBad(ids, bad);
  // Lane v is bad when negative (its top bit) or, as 31 bits, at least n: v + (2^31 - n) then
  // reaches bit 31, without carrying out of the lane.
  const uint64_t shift = (uint64_t{1} << 31) - static_cast<uint64_t>(num_nodes);
  const uint64_t add = shift | shift << 32;
  const bool any =
      AnyLaneTopBit(ids.data(), ids.size_bytes(), 0x8000000080000000ull,
                    [add](uint64_t w) { return w | ((w & 0x7fffffff7fffffffull) + add); });
  return any || TailBad(ids, bad) ? FirstBad(ids, bad) : -1;
}

int64_t FirstIdOutOfRange(std::span<const int64_t> ids, int64_t num_nodes) {
  unsigned any = 0;
  for (const int64_t v : ids) any |= static_cast<uint64_t>(v) >= static_cast<uint64_t>(num_nodes);
  if (any == 0) return -1;
  return FirstBad(ids, [num_nodes](int64_t v) { return v < 0 || v >= num_nodes; });
}

Status NeighborOutOfRange(const std::string& path, int64_t node, int64_t value, int64_t num_nodes) {
  return Status::Corruption(path + ": node " + std::to_string(node) + " has neighbour " +
                            std::to_string(value) +
                            ", outside [0, num_nodes = " + std::to_string(num_nodes) + ")");
}

// An IEEE value is NaN or infinite when its exponent bits are all ones. A lane's exponent, plus
// one in its lowest bit, reaches the lane's top bit only then (never carrying out of the lane).
int64_t FirstNonFinite(std::span<const float> values) {
  auto bad = [](float v) { return (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u; };
  const bool any =
      AnyLaneTopBit(values.data(), values.size_bytes(), 0x8000000080000000ull,
                    [](uint64_t w) { return (w & 0x7f8000007f800000ull) + 0x0080000000800000ull; });
  return any || TailBad(values, bad) ? FirstBad(values, bad) : -1;
}

int64_t FirstNonFiniteHalf(std::span<const uint16_t> values) {
  auto bad = [](uint16_t v) { return (v & 0x7c00u) == 0x7c00u; };
  const bool any =
      AnyLaneTopBit(values.data(), values.size_bytes(), 0x8000800080008000ull,
                    [](uint64_t w) { return (w & 0x7c007c007c007c00ull) + 0x0400040004000400ull; });
  return any || TailBad(values, bad) ? FirstBad(values, bad) : -1;
}

Status NonFiniteFeature(const std::string& path, int64_t node, int64_t column, float value) {
  return Status::Corruption(
      path + ": node " + std::to_string(node) + " has feature " + std::to_string(column) + " = " +
      (std::isnan(value) ? std::string("nan") : std::string(value > 0 ? "inf" : "-inf")) +
      "; feature values must be finite");
}

uint64_t EdgeHash(int64_t u, int64_t v) {
  return SplitMixFinalize(static_cast<uint64_t>(u) * kGoldenGamma ^ static_cast<uint64_t>(v));
}

Status CheckPermutation(const std::string& path, std::span<const int64_t> ids) {
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<bool> seen(ids.size(), false);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t old = ids[static_cast<size_t>(v)];
    if (old < 0 || old >= n || seen[static_cast<size_t>(old)]) {
      return Status::Corruption(
          path + ": node " + std::to_string(v) + " maps to ID " + std::to_string(old) +
          ", which is out of range or taken: not a permutation of [0, " + std::to_string(n) + ")");
    }
    seen[static_cast<size_t>(old)] = true;
  }
  return Status::Ok();
}

Status CheckSplitsDisjoint(const std::string& dir,
                           std::span<const std::vector<int64_t>* const> splits,
                           std::span<const char* const> names, int64_t num_nodes) {
  SKIFF_CHECK(splits.size() == names.size() && splits.size() < 128);
  std::vector<int8_t> owner(static_cast<size_t>(num_nodes), -1);
  for (size_t s = 0; s < splits.size(); ++s) {
    for (const int64_t v : *splits[s]) {
      SKIFF_CHECK(v >= 0 && v < num_nodes);
      int8_t& o = owner[static_cast<size_t>(v)];
      if (o >= 0) {
        return Status::Corruption(dir + ": node " + std::to_string(v) + " is in both " +
                                  names[static_cast<size_t>(o)] + " and " + names[s] +
                                  "; splits must be disjoint");
      }
      o = static_cast<int8_t>(s);
    }
  }
  return Status::Ok();
}

namespace {
using Pair = std::pair<int64_t, int64_t>;
struct PairHash {
  size_t operator()(const Pair& p) const {
    return static_cast<size_t>(
        Mix64(static_cast<uint64_t>(p.first) * kGoldenGamma ^ static_cast<uint64_t>(p.second)));
  }
};
}  // namespace

Status CheckEdgeSplitDisjoint(const std::string& dir, bool undirected,
                              std::span<const std::vector<int64_t>* const> pairs,
                              std::span<const char* const> names) {
  SKIFF_CHECK(pairs.size() == names.size() && !pairs.empty());
  auto key = [&](int64_t u, int64_t v) {
    return undirected ? Pair{std::min(u, v), std::max(u, v)} : Pair{u, v};
  };
  size_t held = 0;
  for (size_t f = 1; f < pairs.size(); ++f) held += pairs[f]->size() / 2;
  std::unordered_map<Pair, size_t, PairHash> owner;  // pair -> index of its file
  owner.reserve(held);
  auto conflict = [&](size_t f, size_t i, size_t other) {
    const auto& p = *pairs[f];
    return Status::Corruption(dir + "/" + names[f] + ": pair " + std::to_string(i) + " (" +
                              std::to_string(p[2 * i]) + ", " + std::to_string(p[2 * i + 1]) +
                              ") is also in " + names[other] + "; the splits must be disjoint");
  };
  for (size_t f = pairs.size(); f-- > 1;) {
    const auto& p = *pairs[f];
    for (size_t i = 0; i < p.size() / 2; ++i) {
      auto [it, inserted] = owner.emplace(key(p[2 * i], p[2 * i + 1]), f);
      if (!inserted && it->second != f) return conflict(f, i, it->second);
    }
  }
  const auto& first = *pairs[0];
  for (size_t i = 0; i < first.size() / 2; ++i) {
    if (auto it = owner.find(key(first[2 * i], first[2 * i + 1])); it != owner.end()) {
      return conflict(0, i, it->second);
    }
  }
  return Status::Ok();
}

}  // namespace skiff::format
