#include "skiff/sampler/csr_source.h"

#include <string>

namespace skiff::sampler {
namespace {

Status CheckRange(const char* what, int64_t first, int64_t count, int64_t size) {
  if (first < 0 || count < 0 || first + count > size) {
    return Status::InvalidArgument(std::string(what) + " range [" + std::to_string(first) + ", " +
                                   std::to_string(first + count) + ") outside [0, " +
                                   std::to_string(size) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status DatasetCsr::ReadOffsets(int64_t first, int64_t count, int64_t* out) const {
  SKIFF_RETURN_IF_ERROR(CheckRange("offsets", first, count, num_nodes() + 1));
  SKIFF_ASSIGN_OR_RETURN(const format::ChecksummedFileReader* r,
                         dataset_.File(format::kOffsetsFile));
  return r->ReadAt(static_cast<uint64_t>(first) * sizeof(int64_t),
                   static_cast<uint64_t>(count) * sizeof(int64_t), out);
}

Status DatasetCsr::ReadNeighbors(int64_t first, int64_t count, int64_t* out) const {
  SKIFF_RETURN_IF_ERROR(CheckRange("neighbours", first, count, num_edges()));
  SKIFF_ASSIGN_OR_RETURN(const format::ChecksummedFileReader* r,
                         dataset_.File(format::kNeighborsFile));
  if (dataset_.manifest().neighbor_dtype == format::DType::kInt64) {
    return r->ReadAt(static_cast<uint64_t>(first) * sizeof(int64_t),
                     static_cast<uint64_t>(count) * sizeof(int64_t), out);
  }
  // int32 on disk: read into the back half of `out`, then widen front to back.
  auto* narrow = reinterpret_cast<int32_t*>(out + count) - count;
  SKIFF_RETURN_IF_ERROR(r->ReadAt(static_cast<uint64_t>(first) * sizeof(int32_t),
                                  static_cast<uint64_t>(count) * sizeof(int32_t), narrow));
  for (int64_t i = 0; i < count; ++i) out[i] = narrow[i];
  return Status::Ok();
}

Status CheckOffsetsRange(const CsrSource& source, int64_t first, int64_t count,
                         const int64_t* offsets, int64_t previous) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t at = first + i;
    const bool bad = (at == 0 && offsets[i] != 0) || offsets[i] < previous ||
                     offsets[i] > source.num_edges() ||
                     (at == source.num_nodes() && offsets[i] != source.num_edges());
    if (bad) {
      return Status::Corruption(source.Describe() + ": graph.offsets entry " + std::to_string(at) +
                                " = " + std::to_string(offsets[i]) +
                                " (offsets must start at 0, never decrease, and end at " +
                                std::to_string(source.num_edges()) + ")");
    }
    previous = offsets[i];
  }
  return Status::Ok();
}

Status CheckNeighborsRange(const CsrSource& source, int64_t first, int64_t count,
                           const int64_t* neighbors) {
  for (int64_t i = 0; i < count; ++i) {
    if (neighbors[i] < 0 || neighbors[i] >= source.num_nodes()) {
      return Status::Corruption(source.Describe() + ": graph.neighbors entry " +
                                std::to_string(first + i) + " = " + std::to_string(neighbors[i]) +
                                " is not a node in [0, " + std::to_string(source.num_nodes()) +
                                ")");
    }
  }
  return Status::Ok();
}

}  // namespace skiff::sampler
