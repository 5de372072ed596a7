#include "src/partition/pair_counts.h"

#include <algorithm>

#include "skiff/status.h"

namespace skiff::partition {

PairCounts::PairCounts(size_t max_distinct) : max_distinct_(max_distinct) {
  SetBufferLimit();
  counts_.reserve(max_distinct_);
  buffer_.reserve(std::max<size_t>(1, max_distinct_ / 4));
}

void PairCounts::SetBufferLimit() {
  const size_t most = std::max<size_t>(1, max_distinct_ / 4);
  buffer_limit_ = std::clamp(counts_.size(), std::min(kMinBuffer, most), most);
}

bool PairCounts::Finish() {
  if (!full_ && !buffer_.empty()) Merge();
  buffer_ = std::vector<uint64_t>();
  return !full_;
}

void PairCounts::Merge() {
  std::sort(buffer_.begin(), buffer_.end());
  // The merged size: the counts, plus the buffer's distinct keys that they do not hold yet.
  size_t merged = counts_.size();
  size_t c = 0;
  for (size_t i = 0; i < buffer_.size(); ++i) {
    if (i > 0 && buffer_[i] == buffer_[i - 1]) continue;
    while (c < counts_.size() && counts_[c].key < buffer_[i]) ++c;
    if (c == counts_.size() || counts_[c].key != buffer_[i]) ++merged;
  }
  if (merged > max_distinct_) {
    full_ = true;
    counts_ = std::vector<Entry>();
    buffer_ = std::vector<uint64_t>();
    return;
  }
  // Merged from the back into [0, merged): the write position never passes an unread count.
  size_t old = counts_.size();
  counts_.resize(merged);
  size_t out = merged;
  size_t b = buffer_.size();
  while (b > 0) {
    const uint64_t key = buffer_[b - 1];
    int64_t run = 0;
    for (; b > 0 && buffer_[b - 1] == key; --b) ++run;
    while (old > 0 && counts_[old - 1].key > key) counts_[--out] = counts_[--old];
    if (old > 0 && counts_[old - 1].key == key) {
      counts_[--out] = {key, counts_[--old].count + run};
    } else {
      counts_[--out] = {key, run};
    }
  }
  SKIFF_CHECK(out == old);  // the counts below `old` are already in place
  buffer_.clear();
  SetBufferLimit();
}

}  // namespace skiff::partition
