#include "skiff/pipeline/buffered_graph.h"

#include <algorithm>
#include <cstring>

#include "skiff/enum_names.h"
#include "skiff/format/dataset.h"
#include "skiff/half.h"
#include "skiff/prefetch.h"
#include "skiff/sampler/feature_source.h"

namespace skiff::pipeline {

using storage::DatasetPartitionSource;
using storage::FineRead;

namespace {
constexpr EnumName<SamplingMode> kSamplingModes[] = {{SamplingMode::kExact, "exact"},
                                                     {SamplingMode::kInBuffer, "in-buffer"},
                                                     {SamplingMode::kInBuffer, "in_buffer"}};
}  // namespace

const char* SamplingModeName(SamplingMode mode) { return NameOf(kSamplingModes, mode); }

Result<SamplingMode> ParseSamplingMode(const std::string& name) {
  return ParseName(kSamplingModes, "sampling mode", name, /*listed=*/2);
}

ResidentSet::ResidentSet(std::vector<std::shared_ptr<const storage::PartitionPin>> pins)
    : pins_(std::move(pins)) {
  for (const auto& pin : pins_) num_resident_ += pin != nullptr ? 1 : 0;
}

BufferedGraph::BufferedGraph(const DatasetPartitionSource* source, storage::BufferPool* pool,
                             SamplingMode mode)
    : source_(source), pool_(pool), mode_(mode) {
  const format::Manifest& m = source->manifest();
  num_nodes_ = m.num_nodes;
  feature_dim_ = m.feature_dim;
  row_bytes_ = m.feature_row_bytes();
  half_features_ = m.feature_dtype == format::DType::kFloat16;
}

void BufferedGraph::CopyRow(const std::byte* row, float* dst) const {
  if (!half_features_) {
    std::memcpy(dst, row, row_bytes_);
    return;
  }
  // Rows in the pool's buffers and the stream's scratch are at least 2-byte aligned.
  HalfToFloatRow(reinterpret_cast<const uint16_t*>(row), dst, static_cast<size_t>(feature_dim_));
}

Status BufferedGraph::Neighbors(const ResidentSet& resident, std::span<const int64_t> nodes,
                                std::vector<int64_t>* indptr,
                                std::vector<int64_t>* neighbors) const {
  return NeighborsAs(resident, nodes, indptr, neighbors);
}

Status BufferedGraph::Neighbors(const ResidentSet& resident, std::span<const int64_t> nodes,
                                std::vector<int64_t>* indptr,
                                std::vector<int32_t>* neighbors) const {
  SKIFF_CHECK(num_nodes_ <= INT32_MAX);
  return NeighborsAs(resident, nodes, indptr, neighbors);
}

template <typename Id>
Status BufferedGraph::NeighborsAs(const ResidentSet& resident, std::span<const int64_t> nodes,
                                  std::vector<int64_t>* indptr, std::vector<Id>* neighbors) const {
  indptr->assign(nodes.size() + 1, 0);
  neighbors->clear();
  if (mode_ == SamplingMode::kExact) {
    // Exact mode sizes every list from its full degree up front; in-buffer mode learns the
    // filtered length while copying.
    int64_t total = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      total += source_->degree(nodes[i]);
      (*indptr)[i + 1] = total;
    }
    neighbors->resize(static_cast<size_t>(total));
  }
  std::vector<size_t> fine = CopyResidentLists(resident, nodes, indptr, neighbors);
  // In node (= file) order: each round of reads then covers its own stretch of the file. In
  // request order, every round of a large request (a sampling group's hop: ~20 MiB of lists)
  // spanned the whole file, and reads merged across small gaps read it whole each time.
  std::sort(fine.begin(), fine.end(), [&nodes](size_t a, size_t b) { return nodes[a] < nodes[b]; });
  return ReadFineLists(nodes, fine, *indptr, neighbors);
}

template <typename Id>
std::vector<size_t> BufferedGraph::CopyResidentLists(const ResidentSet& resident,
                                                     std::span<const int64_t> nodes,
                                                     std::vector<int64_t>* indptr,
                                                     std::vector<Id>* neighbors) const {
  const uint64_t nb = source_->neighbor_bytes();
  std::vector<int64_t> list;
  std::vector<size_t> fine;
  uint64_t used = 0, resident_lists = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t node = nodes[i];
    const uint32_t p = source_->partition_of(node);
    used += static_cast<uint64_t>(source_->degree(node)) * nb;
    if (!resident.contains(p)) {
      SKIFF_CHECK_MSG(mode_ == SamplingMode::kExact,
                      "in-buffer sampling asked for a node outside the resident partitions");
      fine.push_back(i);
      continue;
    }
    ++resident_lists;
    source_->NeighborsFromPin(resident.pin(p), node, &list);
    if (mode_ == SamplingMode::kExact) {
      std::transform(list.begin(), list.end(), neighbors->begin() + (*indptr)[i],
                     [](int64_t u) { return static_cast<Id>(u); });
    } else {
      for (int64_t u : list) {
        if (resident.contains(source_->partition_of(u))) neighbors->push_back(static_cast<Id>(u));
      }
      (*indptr)[i + 1] = static_cast<int64_t>(neighbors->size());
    }
  }
  resident_adjacency_.fetch_add(resident_lists, std::memory_order_relaxed);
  bytes_used_.fetch_add(used, std::memory_order_relaxed);
  return fine;
}

template <typename Id>
Status BufferedGraph::ReadFineLists(std::span<const int64_t> nodes, std::span<const size_t> fine,
                                    const std::vector<int64_t>& indptr,
                                    std::vector<Id>* neighbors) const {
  const uint64_t nb = source_->neighbor_bytes();
  std::vector<std::byte> raw;
  std::vector<FineRead> reads;
  size_t next = 0;
  while (next < fine.size()) {
    // One round: lists up to kAdjacencyRoundBytes (at least one list).
    uint64_t round_bytes = 0;
    size_t end = next;
    while (end < fine.size()) {
      const uint64_t bytes = static_cast<uint64_t>(source_->degree(nodes[fine[end]])) * nb;
      if (end > next && round_bytes + bytes > kAdjacencyRoundBytes) break;
      round_bytes += bytes;
      ++end;
    }
    raw.resize(round_bytes);
    reads.clear();
    uint64_t at = 0;
    for (size_t j = next; j < end; ++j) {
      const int64_t node = nodes[fine[j]];
      if (source_->degree(node) == 0) continue;
      reads.push_back(source_->AdjacencyRead(node, raw.data() + at));
      at += reads.back().length;
    }
    fine_requests_.fetch_add(1, std::memory_order_relaxed);
    fine_adjacency_.fetch_add(reads.size(), std::memory_order_relaxed);
    uint64_t bytes = 0;
    const Status read = pool_->ReadRanges(reads, &bytes);
    fine_adjacency_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    SKIFF_RETURN_IF_ERROR(read);
    at = 0;
    for (size_t j = next; j < end; ++j) {
      const size_t i = fine[j];
      const int64_t degree = source_->degree(nodes[i]);
      Id* out = neighbors->data() + indptr[i];
      for (int64_t e = 0; e < degree; ++e, at += nb) {
        if (nb == 4) {
          int32_t v;
          std::memcpy(&v, raw.data() + at, 4);
          out[e] = static_cast<Id>(v);
        } else {
          int64_t v;
          std::memcpy(&v, raw.data() + at, 8);
          out[e] = static_cast<Id>(v);
        }
      }
    }
    next = end;
  }
  return Status::Ok();
}

BufferedGraph::MemoryRow BufferedGraph::FindInMemory(const ResidentSet& resident,
                                                     int64_t node) const {
  if (!source_->partitions_hold_features()) return {nullptr, false};  // read fine-grained
  const uint32_t p = source_->partition_of(node);
  if (resident.contains(p)) {
    const auto extent = resident.pin(p).extent(DatasetPartitionSource::kFeatureExtent);
    const uint64_t offset = static_cast<uint64_t>(node - source_->first_node(p)) * row_bytes_;
    SKIFF_CHECK(offset + row_bytes_ <= extent.size());
    return {extent.data() + offset, false};
  }
  SKIFF_CHECK_MSG(mode_ == SamplingMode::kExact,
                  "in-buffer sampling gathered a node outside the resident partitions");
  if (row_cache_ != nullptr) {
    if (const std::byte* row = row_cache_->Find(node)) return {row, true};
  }
  return {nullptr, false};
}

Status BufferedGraph::Features(const ResidentSet& resident, std::span<const int64_t> nodes,
                               float* dst) const {
  return FeaturesAt(resident, nodes, RowTargets{.base = dst, .rows = {}, .dim = feature_dim_});
}

Status BufferedGraph::FeaturesTo(const ResidentSet& resident, std::span<const int64_t> nodes,
                                 std::span<float* const> dst) const {
  SKIFF_CHECK(dst.size() == nodes.size());
  return FeaturesAt(resident, nodes, RowTargets{.base = nullptr, .rows = dst, .dim = feature_dim_});
}

Status BufferedGraph::FeaturesAt(const ResidentSet& resident, std::span<const int64_t> nodes,
                                 const RowTargets& dst) const {
  std::vector<size_t> fine;
  uint64_t cached = 0;
  // Rows lie at random in memory: each is looked up and prefetched kAhead rows before its copy,
  // so that several rows' misses are in flight at once.
  constexpr size_t kAhead = 8;
  MemoryRow ahead[kAhead];
  auto look_up = [&](size_t i) {
    const MemoryRow row = FindInMemory(resident, nodes[i]);
    if (row.bytes != nullptr) {
      for (uint64_t line = 0; line < row_bytes_; line += 64) PrefetchRead(row.bytes + line);
    }
    return row;
  };
  for (size_t i = 0; i < std::min(nodes.size(), kAhead); ++i) ahead[i] = look_up(i);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const MemoryRow row = ahead[i % kAhead];
    if (i + kAhead < nodes.size()) ahead[i % kAhead] = look_up(i + kAhead);
    if (row.bytes == nullptr) {
      fine.push_back(i);
      continue;
    }
    cached += row.cached ? 1 : 0;
    CopyRow(row.bytes, dst.at(i));
  }
  resident_rows_.fetch_add(nodes.size() - fine.size() - cached, std::memory_order_relaxed);
  cached_rows_.fetch_add(cached, std::memory_order_relaxed);
  bytes_used_.fetch_add(nodes.size() * row_bytes_, std::memory_order_relaxed);
  SKIFF_RETURN_IF_ERROR(FineFeatures(nodes, fine, dst));
  if (!normalize_rows_) return Status::Ok();
  if (dst.rows.empty()) {
    sampler::NormalizeRowsToSumOne(dst.base, static_cast<int64_t>(nodes.size()), feature_dim_);
  } else {
    for (float* row : dst.rows) sampler::NormalizeRowsToSumOne(row, 1, feature_dim_);
  }
  return Status::Ok();
}

Status BufferedGraph::FineFeatures(std::span<const int64_t> nodes, std::span<const size_t> fine,
                                   const RowTargets& dst) const {
  if (fine.empty()) return Status::Ok();

  // Rows of non-resident nodes: float32 rows land in place, so a round is bounded only by its
  // request list: large rounds let the pool sort and merge the batch's rows across the whole file.
  // float16 rows go through a raw buffer of at most kAdjacencyRoundBytes.
  const size_t rows_per_round =
      half_features_ ? std::max<size_t>(1, static_cast<size_t>(kAdjacencyRoundBytes / row_bytes_))
                     : kFeatureRowsPerRound;
  std::vector<std::byte> raw;
  std::vector<FineRead> reads;
  for (size_t begin = 0; begin < fine.size(); begin += rows_per_round) {
    const size_t end = std::min(fine.size(), begin + rows_per_round);
    reads.clear();
    if (half_features_) raw.resize((end - begin) * row_bytes_);
    for (size_t j = begin; j < end; ++j) {
      void* target = half_features_ ? static_cast<void*>(raw.data() + (j - begin) * row_bytes_)
                                    : static_cast<void*>(dst.at(fine[j]));
      reads.push_back(source_->FeatureRowRead(nodes[fine[j]], target));
    }
    fine_requests_.fetch_add(1, std::memory_order_relaxed);
    fine_rows_.fetch_add(reads.size(), std::memory_order_relaxed);
    uint64_t bytes = 0;
    const Status read = pool_->ReadRanges(reads, &bytes);
    fine_row_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    SKIFF_RETURN_IF_ERROR(read);
    if (half_features_) {
      for (size_t j = begin; j < end; ++j) {
        CopyRow(raw.data() + (j - begin) * row_bytes_, dst.at(fine[j]));
      }
    }
  }
  return Status::Ok();
}

Status BufferedGraph::StreamFeatures(const ResidentSet& resident, std::span<const int64_t> nodes,
                                     const RowFn& consume) const {
  // Rows in memory (pinned or cached) are found once here and handed over as the stream passes
  // them; the rest are read.
  std::vector<const std::byte*> in_memory(nodes.size());  // null: read from disk
  std::vector<storage::FineRead> reads;
  std::vector<size_t> index;  // reads[j] is the row of nodes[index[j]]
  uint64_t cached = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    SKIFF_CHECK(i == 0 || nodes[i - 1] < nodes[i]);
    const MemoryRow row = FindInMemory(resident, nodes[i]);
    in_memory[i] = row.bytes;
    cached += row.cached ? 1 : 0;
    if (row.bytes != nullptr) continue;
    reads.push_back(source_->FeatureRowRead(nodes[i], nullptr));
    index.push_back(i);
  }
  resident_rows_.fetch_add(nodes.size() - reads.size() - cached, std::memory_order_relaxed);
  cached_rows_.fetch_add(cached, std::memory_order_relaxed);
  bytes_used_.fetch_add(nodes.size() * row_bytes_, std::memory_order_relaxed);
  fine_rows_.fetch_add(reads.size(), std::memory_order_relaxed);
  fine_requests_.fetch_add(reads.empty() ? 0 : 1, std::memory_order_relaxed);

  std::vector<float> row(static_cast<size_t>(feature_dim_));
  auto hand_over = [&](size_t i, const std::byte* bytes) {
    CopyRow(bytes, row.data());
    if (normalize_rows_) sampler::NormalizeRowsToSumOne(row.data(), 1, feature_dim_);
    return consume(i, row.data());
  };
  size_t next = 0;  // first node not handed over
  uint64_t bytes = 0;
  const Status streamed = pool_->StreamRanges(
      reads,
      [&](size_t j, const std::byte* data) -> Status {
        for (; next < index[j]; ++next) SKIFF_RETURN_IF_ERROR(hand_over(next, in_memory[next]));
        return hand_over(next++, data);
      },
      &bytes);
  fine_row_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  SKIFF_RETURN_IF_ERROR(streamed);
  for (; next < nodes.size(); ++next) SKIFF_RETURN_IF_ERROR(hand_over(next, in_memory[next]));
  return Status::Ok();
}

GraphAccessCounters BufferedGraph::counters() const {
  GraphAccessCounters c;
  c.bytes_used = bytes_used_.load();
  c.fine_requests = fine_requests_.load();
  c.fine_rows = fine_rows_.load();
  c.cached_rows = cached_rows_.load();
  c.fine_adjacency = fine_adjacency_.load();
  c.fine_row_bytes = fine_row_bytes_.load();
  c.fine_adjacency_bytes = fine_adjacency_bytes_.load();
  c.resident_rows = resident_rows_.load();
  c.resident_adjacency = resident_adjacency_.load();
  return c;
}

}  // namespace skiff::pipeline
