// WriteCsr: turns the sorted edge stream of a finished EdgeSorter into the dataset's CSR files,
// graph.offsets (int64[N+1]) and graph.neighbors (int32 when N < 2^31, else int64), streaming
// both into a DatasetWriter in bounded memory. Sets the manifest's num_nodes, num_edges and
// neighbor_dtype.
//
// Returns Corruption if an edge endpoint lies outside [0, num_nodes) (the caller maps IDs, so this
// means the input declared fewer nodes than it uses), or the writer's I/O error.
//
// Thread safety: single-threaded; the sorter and writer are used exclusively during the call.
#pragma once

#include <cstdint>

#include "skiff/convert/external_sort.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

struct CsrResult {
  int64_t num_edges = 0;  // entries written to graph.neighbors
  format::DType neighbor_dtype = format::DType::kInt32;
};

// `total_edges_hint` (edges the sorter holds before de-duplication; 0 if unknown) drives the
// progress line's ETA.
Result<CsrResult> WriteCsr(EdgeSorter& sorter, int64_t num_nodes, format::DatasetWriter& writer,
                           uint64_t total_edges_hint);

}  // namespace skiff::convert
