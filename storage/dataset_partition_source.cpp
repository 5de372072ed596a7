#include "skiff/storage/dataset_partition_source.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "skiff/format/content_checks.h"
#include "skiff/half.h"

namespace skiff::storage {

Result<std::unique_ptr<DatasetPartitionSource>> DatasetPartitionSource::Open(
    const format::Dataset* dataset, const DatasetPartitionSourceOptions& options) {
  std::unique_ptr<DatasetPartitionSource> src(new DatasetPartitionSource());
  src->dataset_ = dataset;
  src->adjacency_only_ = options.adjacency_only;
  const auto& m = dataset->manifest();
  const char* names[2] = {format::kFeaturesFile, format::kNeighborsFile};
  uint32_t alignment = 4096;
  for (int f = 0; f < 2; ++f) {
    SKIFF_ASSIGN_OR_RETURN(src->readers_[f], dataset->File(names[f]));
    SKIFF_ASSIGN_OR_RETURN(src->files_[f],
                           ReadFile::OpenForRead(dataset->dir() + "/" + names[f], options.direct));
    alignment = std::max(
        {alignment, src->files_[f].direct_alignment(), src->readers_[f]->info().block_bytes});
  }
  if ((alignment & (alignment - 1)) != 0) {
    return Status::InvalidArgument(dataset->dir() + ": checksum block size " +
                                   std::to_string(alignment) + " is not a power of two");
  }
  for (int f = 0; f < 2; ++f) {
    const uint64_t window = src->readers_[f]->window_offset();
    if (window % alignment != 0) {
      return Status::InvalidArgument(src->readers_[f]->path() + ": a shard's window at byte " +
                                     std::to_string(window) + " is not aligned to " +
                                     std::to_string(alignment) + " bytes, as direct reads need");
    }
    src->window_[f] = window;
  }
  src->read_alignment_ = alignment;
  src->neighbor_bytes_ = format::DTypeBytes(m.neighbor_dtype);
  if (m.partitions && m.partitions->boundaries.size() >= 2) {
    src->boundaries_ = m.partitions->boundaries;
  } else {
    const int64_t n = m.num_nodes;
    const int64_t per = options.nodes_per_partition > 0 ? options.nodes_per_partition
                                                        : std::max<int64_t>(1, (n + 15) / 16);
    for (int64_t v = 0; v < n; v += per) src->boundaries_.push_back(v);
    src->boundaries_.push_back(n);
    if (src->boundaries_.size() < 2) src->boundaries_ = {0, 0};
  }
  SKIFF_RETURN_IF_ERROR(src->KeepPartitions(options.first_partition, options.end_partition));
  if (src->boundaries_.front() == 0 && src->boundaries_.back() == m.num_nodes) {
    SKIFF_ASSIGN_OR_RETURN(src->offsets_, dataset->LoadOffsets());
  } else {
    SKIFF_ASSIGN_OR_RETURN(
        src->offsets_,
        dataset->LoadOffsetsRange(src->begin_node(), src->end_node() - src->begin_node()));
  }
  src->IndexBoundaries();
  SKIFF_RETURN_IF_ERROR(src->CheckWindows());
  return src;
}

// A shard's offsets could point outside its neighbours' window (a file edited with its checksums
// recomputed): the extents and fine reads would then fall before the file's start.
Status DatasetPartitionSource::CheckWindows() const {
  const uint64_t first = static_cast<uint64_t>(Offset(begin_node())) * neighbor_bytes_;
  const uint64_t end = static_cast<uint64_t>(Offset(end_node())) * neighbor_bytes_;
  const format::FileInfo& info = readers_[kNeighborFile]->info();
  if (first >= info.window_offset && end <= info.window_offset + info.data_bytes) {
    return Status::Ok();
  }
  return Status::Corruption(readers_[kNeighborFile]->path() + ": the rows of nodes [" +
                            std::to_string(begin_node()) + ", " + std::to_string(end_node()) +
                            ") are bytes [" + std::to_string(first) + ", " + std::to_string(end) +
                            ") by graph.offsets, outside this shard's window [" +
                            std::to_string(info.window_offset) + ", " +
                            std::to_string(info.window_offset + info.data_bytes) + ")");
}

Status DatasetPartitionSource::KeepPartitions(uint32_t first, uint32_t end) {
  const auto count = static_cast<uint32_t>(boundaries_.size() - 1);
  if (end == 0) end = count;
  if (first == 0 && end == count) return Status::Ok();
  if (!dataset_->manifest().partitions || first >= end || end > count) {
    return Status::InvalidArgument(
        dataset_->dir() + ": partitions [" + std::to_string(first) + ", " + std::to_string(end) +
        ") asked of a dataset with " +
        (dataset_->manifest().partitions ? std::to_string(count) : std::string("no")) +
        " partitions");
  }
  boundaries_ = std::vector<int64_t>(boundaries_.begin() + first, boundaries_.begin() + end + 1);
  return Status::Ok();
}

std::vector<Extent> DatasetPartitionSource::Extents(uint32_t p) const {
  SKIFF_CHECK(p < num_partitions());
  const int64_t first = boundaries_[p], last = boundaries_[p + 1];
  const uint64_t row = manifest().feature_row_bytes();
  std::vector<Extent> out(2);
  if (last > first && !adjacency_only_) {
    out[kFeatureExtent] = {kFeatureFile, dataset_->FeatureRowOffset(first) - window_[kFeatureFile],
                           static_cast<uint64_t>(last - first) * row};
  } else {
    out[kFeatureExtent] = {kFeatureFile, 0, 0};
  }
  const uint64_t e0 = static_cast<uint64_t>(Offset(first)),
                 e1 = static_cast<uint64_t>(Offset(last));
  out[kNeighborExtent] = {kNeighborFile, e0 * neighbor_bytes_ - window_[kNeighborFile],
                          (e1 - e0) * neighbor_bytes_};
  return out;
}

Status DatasetPartitionSource::Verify(uint32_t index, uint64_t offset, const std::byte* data,
                                      uint64_t bytes) const {
  SKIFF_CHECK(index < 2);
  offset += window_[index];  // the whole file's coordinates
  SKIFF_RETURN_IF_ERROR(readers_[index]->VerifyBlocks(offset, data, bytes));
  return index == kNeighborFile ? CheckNeighborIds(offset, data, bytes)
                                : CheckFeatureValues(offset, data, bytes);
}

// Padding (zeros) is in range; a bad ID is reported with its node, found from the offsets.
Status DatasetPartitionSource::CheckNeighborIds(uint64_t offset, const std::byte* data,
                                                uint64_t bytes) const {
  SKIFF_CHECK(offset % neighbor_bytes_ == 0);
  const int64_t n = manifest().num_nodes;
  const size_t count = bytes / neighbor_bytes_;
  int64_t bad = -1, value = 0;
  if (neighbor_bytes_ == 4) {
    const std::span<const int32_t> ids(reinterpret_cast<const int32_t*>(data), count);
    bad = format::FirstIdOutOfRange(ids, n);
    if (bad >= 0) value = ids[static_cast<size_t>(bad)];
  } else {
    const std::span<const int64_t> ids(reinterpret_cast<const int64_t*>(data), count);
    bad = format::FirstIdOutOfRange(ids, n);
    if (bad >= 0) value = ids[static_cast<size_t>(bad)];
  }
  if (bad < 0) return Status::Ok();
  const int64_t entry = static_cast<int64_t>(offset / neighbor_bytes_) + bad;
  const int64_t node = begin_node() + (std::upper_bound(offsets_.begin(), offsets_.end(), entry) -
                                       offsets_.begin() - 1);
  return format::NeighborOutOfRange(readers_[kNeighborFile]->path(), node, value, n);
}

// Padding (zeros) is finite; a bad value is reported with its node and column, found from the
// feature extents.
Status DatasetPartitionSource::CheckFeatureValues(uint64_t offset, const std::byte* data,
                                                  uint64_t bytes) const {
  const format::Manifest& m = manifest();
  const bool half = m.feature_dtype == format::DType::kFloat16;
  const size_t value_bytes = half ? 2 : 4;
  SKIFF_CHECK(offset % value_bytes == 0);
  const int64_t bad =
      half ? format::FirstNonFiniteHalf({reinterpret_cast<const uint16_t*>(data), bytes / 2})
           : format::FirstNonFinite({reinterpret_cast<const float*>(data), bytes / 4});
  if (bad < 0) return Status::Ok();
  const uint64_t at = offset + static_cast<uint64_t>(bad) * value_bytes;
  const auto& extents = m.feature_extent_offsets;
  const auto part = static_cast<size_t>(std::upper_bound(extents.begin(), extents.end(), at) -
                                        extents.begin() - 1);
  const int64_t first = m.partitions ? m.partitions->boundaries[part] : 0;
  const uint64_t row_bytes = std::max<uint64_t>(m.feature_row_bytes(), 1);
  const auto within = at - extents[part];
  float value = 0;
  if (half) {
    uint16_t h;
    std::memcpy(&h, data + bad * 2, 2);
    value = HalfToFloat(h);
  } else {
    std::memcpy(&value, data + bad * 4, 4);
  }
  return format::NonFiniteFeature(readers_[kFeatureFile]->path(),
                                  first + static_cast<int64_t>(within / row_bytes),
                                  static_cast<int64_t>(within % row_bytes / value_bytes), value);
}

void DatasetPartitionSource::IndexBoundaries() {
  const int64_t n = end_node() - begin_node();
  const int64_t mean = std::max<int64_t>(1, n / static_cast<int64_t>(num_partitions()));
  block_shift_ = std::bit_width(static_cast<uint64_t>(mean)) - 1;
  block_partition_.clear();
  for (int64_t first = begin_node(); first < end_node(); first += int64_t{1} << block_shift_) {
    block_partition_.push_back(static_cast<uint32_t>(
        std::upper_bound(boundaries_.begin(), boundaries_.end(), first) - boundaries_.begin() - 1));
  }
}

uint32_t DatasetPartitionSource::partition_of(int64_t node) const {
  SKIFF_CHECK(node >= begin_node() && node < end_node());
  // The partition of the block's first node, then forward past the boundaries inside the block
  // (blocks are no longer than the mean partition: usually none, one at most when balanced).
  uint32_t p = block_partition_[static_cast<size_t>((node - begin_node()) >> block_shift_)];
  while (boundaries_[p + 1] <= node) ++p;
  return p;
}

void DatasetPartitionSource::NeighborsFromPin(const PartitionPin& pin, int64_t node,
                                              std::vector<int64_t>* out) const {
  const uint32_t p = pin.partition();
  SKIFF_CHECK(node >= boundaries_[p] && node < boundaries_[p + 1]);
  const auto bytes = pin.extent(kNeighborExtent);
  const std::byte* row = bytes.data() + (Offset(node) - Offset(boundaries_[p])) * neighbor_bytes_;
  const auto degree = static_cast<size_t>(this->degree(node));
  out->resize(degree);
  if (degree == 0) return;
  if (neighbor_bytes_ == 8) {
    std::memcpy(out->data(), row, degree * 8);
    return;
  }
  for (size_t i = 0; i < degree; ++i) {  // 32-bit ids, widened
    int32_t v;
    std::memcpy(&v, row + i * 4, 4);
    (*out)[i] = v;
  }
}

void DatasetPartitionSource::PrefetchRowFromPin(const PartitionPin& pin, int64_t node) const {
  const uint32_t p = pin.partition();
  const std::byte* row = pin.extent(kNeighborExtent).data() +
                         (Offset(node) - Offset(boundaries_[p])) * neighbor_bytes_;
  // Every line of the row, up to kPrefetchRowLines: picks fall anywhere in it.
  constexpr uint64_t kLine = 64, kPrefetchRowLines = 4;
  const uint64_t bytes = static_cast<uint64_t>(degree(node)) * neighbor_bytes_;
  const auto first = reinterpret_cast<uintptr_t>(row) / kLine * kLine;
  const uintptr_t end = std::min<uintptr_t>(reinterpret_cast<uintptr_t>(row) + bytes,
                                            first + kPrefetchRowLines * kLine);
  for (uintptr_t line = first; line < end; line += kLine) {
    PrefetchRead(reinterpret_cast<const void*>(line));
  }
}

void DatasetPartitionSource::NeighborsAtFromPin(const PartitionPin& pin, int64_t node,
                                                std::span<const int64_t> positions,
                                                int64_t* out) const {
  const uint32_t p = pin.partition();
  SKIFF_CHECK(node >= boundaries_[p] && node < boundaries_[p + 1]);
  const int64_t degree = this->degree(node);
  const std::byte* row = pin.extent(kNeighborExtent).data() +
                         (Offset(node) - Offset(boundaries_[p])) * neighbor_bytes_;
  for (size_t i = 0; i < positions.size(); ++i) {
    SKIFF_CHECK(positions[i] >= 0 && positions[i] < degree);
    const std::byte* at = row + positions[i] * neighbor_bytes_;
    if (neighbor_bytes_ == 4) {
      int32_t v;
      std::memcpy(&v, at, 4);
      out[i] = v;
    } else {
      std::memcpy(&out[i], at, 8);
    }
  }
}

FineRead DatasetPartitionSource::FeatureRowRead(int64_t node, void* dst) const {
  return FineRead{kFeatureFile, dataset_->FeatureRowOffset(node) - window_[kFeatureFile],
                  manifest().feature_row_bytes(), dst};
}

FineRead DatasetPartitionSource::AdjacencyRead(int64_t node, void* dst) const {
  return FineRead{kNeighborFile,
                  static_cast<uint64_t>(Offset(node)) * neighbor_bytes_ - window_[kNeighborFile],
                  static_cast<uint64_t>(degree(node)) * neighbor_bytes_, dst};
}

}  // namespace skiff::storage
