#include "skiff/convert/csr_builder.h"

#include <vector>

#include "skiff/log.h"
#include "skiff/progress.h"

namespace skiff::convert {

Result<CsrResult> WriteCsr(EdgeSorter& sorter, int64_t num_nodes, format::DatasetWriter& writer,
                           uint64_t total_edges_hint) {
  SKIFF_CHECK(num_nodes >= 0);
  CsrResult result;
  result.neighbor_dtype =
      num_nodes < (int64_t{1} << 31) ? format::DType::kInt32 : format::DType::kInt64;
  const bool narrow = result.neighbor_dtype == format::DType::kInt32;
  SKIFF_ASSIGN_OR_RETURN(auto offsets_file, writer.CreateFile(format::kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(auto neighbors_file, writer.CreateFile(format::kNeighborsFile));

  constexpr size_t kChunkEdges = 1 << 16;
  std::vector<Edge> edges(kChunkEdges);
  std::vector<int32_t> nbr32;
  std::vector<int64_t> nbr64;
  std::vector<int64_t> offsets;
  offsets.reserve(kChunkEdges);
  nbr32.reserve(narrow ? kChunkEdges : 0);
  nbr64.reserve(narrow ? 0 : kChunkEdges);

  int64_t next_row = 0;  // offsets[0..next_row) have been emitted
  int64_t written = 0;
  auto flush_offsets = [&]() -> Status {
    SKIFF_RETURN_IF_ERROR(offsets_file->Append(offsets.data(), offsets.size() * sizeof(int64_t)));
    offsets.clear();
    return Status::Ok();
  };
  // Emits offsets for rows up to and including `row`: every row before `row` ends at `written`.
  auto emit_rows_through = [&](int64_t row) -> Status {
    while (next_row <= row) {
      offsets.push_back(written);
      ++next_row;
      if (offsets.size() == kChunkEdges) SKIFF_RETURN_IF_ERROR(flush_offsets());
    }
    return Status::Ok();
  };

  Progress progress("build CSR", total_edges_hint, "edges");
  uint64_t consumed = 0;
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(size_t n, sorter.Read(edges.data(), edges.size()));
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) {
      const Edge& e = edges[i];
      if (e.src < 0 || e.src >= num_nodes || e.dst < 0 || e.dst >= num_nodes) {
        return Status::Corruption("edge (" + std::to_string(e.src) + ", " + std::to_string(e.dst) +
                                  ") has an endpoint outside [0, " + std::to_string(num_nodes) +
                                  "), the number of nodes");
      }
      SKIFF_RETURN_IF_ERROR(emit_rows_through(e.src));
      if (narrow) {
        nbr32.push_back(static_cast<int32_t>(e.dst));
      } else {
        nbr64.push_back(e.dst);
      }
      ++written;
    }
    if (narrow) {
      SKIFF_RETURN_IF_ERROR(neighbors_file->Append(nbr32.data(), nbr32.size() * 4));
      nbr32.clear();
    } else {
      SKIFF_RETURN_IF_ERROR(neighbors_file->Append(nbr64.data(), nbr64.size() * 8));
      nbr64.clear();
    }
    consumed += n;
    progress.Set(std::min<uint64_t>(consumed + sorter.stats().duplicates_dropped,
                                    total_edges_hint ? total_edges_hint : ~0ull));
  }
  SKIFF_RETURN_IF_ERROR(emit_rows_through(num_nodes));  // rows with no edges, and offsets[N] = E
  SKIFF_RETURN_IF_ERROR(flush_offsets());
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
