// How often each (a, b) pair occurs in a stream of pairs, in memory proportional to the distinct
// pairs rather than to the stream: GREM's cluster graph (partitioner.cpp, ContractClusters), where
// a graph's edges between clusters repeat each distinct pair of clusters several times (8 times
// on average in the generated 10M-edge graph).
//
// New pairs are appended to a buffer of 8-byte keys. When the buffer is as long as the counts
// (at least kMinBuffer keys, at most a quarter of the limit), it is sorted and merged into the
// sorted counts in place, from the back, after a first scan has sized the result exactly. Memory:
// at most 16 bytes per distinct pair for the counts (`reserve`d once at the limit, so they never
// reallocate; pages are touched only as they fill) and 2 bytes per allowed pair for the buffer,
// i.e. within 18 * max_distinct bytes.
//
// Thread safety: none; one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace skiff::partition {

class PairCounts {
 public:
  struct Entry {
    uint64_t key;  // a << 32 | b
    int64_t count;
    uint32_t first() const { return static_cast<uint32_t>(key >> 32); }
    uint32_t second() const { return static_cast<uint32_t>(key); }
  };
  static constexpr size_t kMinBuffer = size_t{1} << 20;

  // Holds at most `max_distinct` distinct pairs; beyond that the counts are abandoned (full()).
  explicit PairCounts(size_t max_distinct);

  // Counts one occurrence of (a, b); does nothing once full().
  void Add(uint32_t a, uint32_t b) {
    if (full_) return;
    buffer_.push_back(uint64_t{a} << 32 | b);
    if (buffer_.size() >= buffer_limit_) Merge();
  }
  // Merges what is buffered and frees the buffer; the counts are then final. Returns !full().
  bool Finish();

  // More than max_distinct distinct pairs were seen; the counts are empty.
  bool full() const { return full_; }
  // Sorted by key (a, then b), each key once. Complete only after Finish().
  const std::vector<Entry>& entries() const { return counts_; }

 private:
  void Merge();
  // The buffer merges when it is as long as the counts, within [kMinBuffer, max_distinct / 4].
  void SetBufferLimit();

  size_t max_distinct_;
  size_t buffer_limit_ = 1;
  bool full_ = false;
  std::vector<uint64_t> buffer_;
  std::vector<Entry> counts_;
};

}  // namespace skiff::partition
