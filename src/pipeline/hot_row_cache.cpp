#include "skiff/pipeline/hot_row_cache.h"

#include <algorithm>

namespace skiff::pipeline {
namespace {

constexpr size_t kRowsPerRead = 16384;  // rows per ReadRanges call while filling

// The degree at or above which nodes are cached so that at most `rows` are: every node of degree >
// threshold, and the lowest ids of degree == threshold up to `rows` in all. Two passes, no per-node
// allocation.
int64_t Threshold(const storage::DatasetPartitionSource& source, int64_t num_nodes, int64_t rows,
                  int64_t* at_threshold) {
  constexpr int64_t kBuckets = 1 << 16;
  std::vector<int64_t> count(kBuckets, 0);
  for (int64_t v = 0; v < num_nodes; ++v) {
    ++count[static_cast<size_t>(std::min(source.degree(v), kBuckets - 1))];
  }
  int64_t taken = 0;
  for (int64_t d = kBuckets - 1; d >= 0; --d) {
    const int64_t c = count[static_cast<size_t>(d)];
    if (taken + c >= rows) {
      *at_threshold = rows - taken;
      return d;
    }
    taken += c;
  }
  *at_threshold = 0;
  return 0;
}

}  // namespace

uint64_t HotRowCache::BytesFor(int64_t rows, uint64_t row_bytes, int64_t num_nodes) {
  if (rows <= 0) return 0;
  return static_cast<uint64_t>(rows) * (row_bytes + 8) +
         (static_cast<uint64_t>(num_nodes) + 63) / 64 * 8;
}

Result<HotRowCache> HotRowCache::Build(const storage::DatasetPartitionSource& source,
                                       storage::BufferPool& pool, uint64_t capacity_bytes) {
  HotRowCache cache;
  const int64_t n = source.manifest().num_nodes;
  cache.row_bytes_ = source.manifest().feature_row_bytes();
  const uint64_t bitmap = (static_cast<uint64_t>(n) + 63) / 64 * 8;
  if (n == 0 || cache.row_bytes_ == 0 || capacity_bytes <= bitmap) return cache;
  const auto rows = std::min<int64_t>(
      n, static_cast<int64_t>((capacity_bytes - bitmap) / (cache.row_bytes_ + 8)));
  if (rows == 0) return cache;
  int64_t at_threshold = 0;
  const int64_t threshold = Threshold(source, n, rows, &at_threshold);
  cache.nodes_.reserve(static_cast<size_t>(rows));
  cache.member_.assign(static_cast<size_t>((n + 63) / 64), 0);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t d = std::min<int64_t>(source.degree(v), (1 << 16) - 1);
    if (d < threshold || (d == threshold && at_threshold-- <= 0)) continue;
    cache.nodes_.push_back(v);
    cache.member_[static_cast<size_t>(v / 64)] |= uint64_t{1} << (v % 64);
  }
  cache.rows_.resize(cache.nodes_.size() * cache.row_bytes_);
  std::vector<storage::FineRead> reads;
  for (size_t begin = 0; begin < cache.nodes_.size(); begin += kRowsPerRead) {
    const size_t end = std::min(cache.nodes_.size(), begin + kRowsPerRead);
    reads.clear();
    for (size_t i = begin; i < end; ++i) {
      reads.push_back(
          source.FeatureRowRead(cache.nodes_[i], cache.rows_.data() + i * cache.row_bytes_));
    }
    SKIFF_RETURN_IF_ERROR(pool.ReadRanges(reads).WithContext("filling the hot row cache"));
  }
  return cache;
}

const std::byte* HotRowCache::Find(int64_t node) const {
  if (nodes_.empty() || node < 0 ||
      (member_[static_cast<size_t>(node / 64)] & (uint64_t{1} << (node % 64))) == 0) {
    return nullptr;
  }
  const auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  return rows_.data() + static_cast<size_t>(it - nodes_.begin()) * row_bytes_;
}

}  // namespace skiff::pipeline
