#include "skiff/convert/csr_builder.h"

#include <span>
#include <vector>

#include "skiff/log.h"
#include "skiff/progress.h"

namespace skiff::convert {

namespace {

constexpr size_t kChunkEdges = 1 << 16;

// Writes graph.offsets as the sorted edges go by: each row's offset is the number of edges
// written before it.
class OffsetWriter {
 public:
  explicit OffsetWriter(format::ChecksummedFileWriter* file) : file_(file) {
    offsets_.reserve(kChunkEdges);
  }

  // Emits the offsets of the rows up to and including `row`: each row before `row` ends at
  // `edges_written`.
  Status EmitThrough(int64_t row, int64_t edges_written) {
    while (next_row_ <= row) {
      offsets_.push_back(edges_written);
      ++next_row_;
      if (offsets_.size() == kChunkEdges) SKIFF_RETURN_IF_ERROR(Flush());
    }
    return Status::Ok();
  }

  Status Flush() {
    SKIFF_RETURN_IF_ERROR(file_->Append(offsets_.data(), offsets_.size() * sizeof(int64_t)));
    offsets_.clear();
    return Status::Ok();
  }

 private:
  format::ChecksummedFileWriter* const file_;
  std::vector<int64_t> offsets_;
  int64_t next_row_ = 0;  // offsets[0 .. next_row_) have been emitted
};

// Appends the destinations of `edges` to graph.neighbors as `Id`s (its dtype), through `*ids`.
template <typename Id>
Status AppendNeighbors(std::span<const Edge> edges, std::vector<Id>* ids,
                       format::ChecksummedFileWriter& file) {
  ids->clear();
  for (const Edge& e : edges) ids->push_back(static_cast<Id>(e.dst));
  return file.Append(ids->data(), ids->size() * sizeof(Id));
}

Status CheckEndpoints(const Edge& e, int64_t num_nodes) {
  if (e.src >= 0 && e.src < num_nodes && e.dst >= 0 && e.dst < num_nodes) return Status::Ok();
  return Status::Corruption("edge (" + std::to_string(e.src) + ", " + std::to_string(e.dst) +
                            ") has an endpoint outside [0, " + std::to_string(num_nodes) +
                            "), the number of nodes");
}

}  // namespace

Result<CsrResult> WriteCsr(EdgeSorter& sorter, int64_t num_nodes, format::DatasetWriter& writer,
                           uint64_t total_edges_hint) {
  SKIFF_CHECK(num_nodes >= 0);
  CsrResult result;
  result.neighbor_dtype =
      num_nodes < (int64_t{1} << 31) ? format::DType::kInt32 : format::DType::kInt64;
  const bool narrow = result.neighbor_dtype == format::DType::kInt32;
  SKIFF_ASSIGN_OR_RETURN(auto offsets_file, writer.CreateFile(format::kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(auto neighbors_file, writer.CreateFile(format::kNeighborsFile));
  std::vector<Edge> edges(kChunkEdges);
  std::vector<int32_t> nbr32;
  std::vector<int64_t> nbr64;
  if (narrow) {
    nbr32.reserve(kChunkEdges);
  } else {
    nbr64.reserve(kChunkEdges);
  }
  OffsetWriter offsets(offsets_file.get());
  int64_t written = 0;
  Progress progress("build CSR", total_edges_hint, "edges");
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(size_t n, sorter.Read(edges.data(), edges.size()));
    if (n == 0) break;
    const std::span<const Edge> chunk(edges.data(), n);
    for (const Edge& e : chunk) {
      SKIFF_RETURN_IF_ERROR(CheckEndpoints(e, num_nodes));
      SKIFF_RETURN_IF_ERROR(offsets.EmitThrough(e.src, written++));
    }
    SKIFF_RETURN_IF_ERROR(narrow ? AppendNeighbors(chunk, &nbr32, *neighbors_file)
                                 : AppendNeighbors(chunk, &nbr64, *neighbors_file));
    progress.Set(std::min<uint64_t>(written + sorter.stats().duplicates_dropped,
                                    total_edges_hint ? total_edges_hint : ~0ull));
  }
  // Rows with no edges, and offsets[N] = E.
  SKIFF_RETURN_IF_ERROR(offsets.EmitThrough(num_nodes, written));
  SKIFF_RETURN_IF_ERROR(offsets.Flush());
  progress.Finish();
  SKIFF_RETURN_IF_ERROR(writer.FinishFile(*offsets_file));
  SKIFF_RETURN_IF_ERROR(writer.FinishFile(*neighbors_file));
  auto& m = writer.manifest();
  m.num_nodes = num_nodes;
  m.num_edges = written;
  m.neighbor_dtype = result.neighbor_dtype;
  result.num_edges = written;
  return result;
}

}  // namespace skiff::convert
