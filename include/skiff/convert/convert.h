// `skiff convert` as a library call: reads a graph in the format people have it in -- a text edge
// list, a METIS graph, the OGB node-property raw layout or a .npz archive -- and writes a Skiff
// dataset (docs/FORMAT.md), streaming, in memory bounded by ConvertOptions::memory_bytes.
//
// Pipeline (docs/convert.md explains each decision):
//   parse -> node IDs to dense [0, N) (identity when already dense, else mapped by sorting:
//   IdMapBuilder, bulk-loaded into the RocksDB IdMap) ->
//   EdgeSorter (in memory, or sorted runs spilled and k-way merged) -> WriteCsr ->
//   features / labels (from the input, or .npy files) -> splits -> DatasetWriter::Commit().
// With largest_component, that dataset is written inside the output's temporary directory, and
// WriteLargestComponent (largest_component.h) rewrites it with only its largest weakly connected
// component before the commit. With edge_split, the dataset so far (whole or component) is
// written there likewise and WriteEdgeSplit (edge_split.h) rewrites it with held-out edges, last.
// Every failure returns a Status naming the file, the line (or byte offset) and what was expected,
// and leaves no output directory: everything is written inside the DatasetWriter's temporary
// directory, which is removed unless the conversion commits.
//
// Thread safety: ConvertGraph may run concurrently for different outputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "skiff/convert/edge_list.h"
#include "skiff/convert/edge_split.h"
#include "skiff/convert/splits.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

enum class InputFormat { kAuto, kEdgeList, kMetis, kNpz, kOgb };
enum class IdMapMode { kAuto, kAlways, kNever };
// kDefault: edge lists and OGB directed; METIS undirected (it lists every edge at both ends).
enum class Direction { kDefault, kDirected, kUndirected };

const char* InputFormatName(InputFormat format);
Result<InputFormat> ParseInputFormat(const std::string& name);
Result<IdMapMode> ParseIdMapMode(const std::string& name);

// Resolves kAuto from the input: "*.npz" -> npz; a directory with raw/ -> ogb;
// "*.graph" / "*.metis" (optionally + ".gz") -> metis; anything else -> edge list.
Result<InputFormat> DetectInputFormat(const std::string& input);

struct ConvertOptions {
  std::string input;
  std::string output;
  InputFormat format = InputFormat::kAuto;
  Direction direction = Direction::kDefault;
  bool keep_self_loops = false;
  bool keep_duplicates = false;
  uint64_t memory_bytes = 0;  // 0: a quarter of physical memory
  std::string features_npy;   // edge lists / METIS: float features, shape [N, D] (or [N])
  std::string labels_npy;     // edge lists / METIS: integer labels, shape [N]; -1 = unlabelled
  SplitSpec split;            // used when the input carries no splits
  format::DType feature_dtype = format::DType::kFloat32;
  IdMapMode id_map = IdMapMode::kAuto;
  bool overwrite = false;
  std::string tmp_dir;        // spill directory parent; "" = inside the output's temp directory
  EdgeListOptions edge_list;  // header / extra-column handling
  std::string ogb_split;      // OGB: split/<name> to use ("" = the only one)
  // Keep only the largest weakly connected component, renumbered in increasing ID order; splits
  // the input carries are filtered to it, drawn ones are drawn on it.
  bool largest_component = false;
  // Hold out edges for link prediction (after largest_component when both are asked).
  std::optional<EdgeSplitSpec> edge_split;
};

struct ConvertSummary {
  InputFormat format = InputFormat::kAuto;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;     // stored (directed) edges
  uint64_t input_edges = 0;  // edges (or adjacency entries) read from the input
  uint64_t self_loops_dropped = 0;
  uint64_t duplicates_dropped = 0;
  uint64_t runs_spilled = 0;
  uint64_t bytes_spilled = 0;
  bool id_map_used = false;
  uint64_t id_runs_spilled = 0;   // ID mapping: sorted runs written (0: every ID fit in memory)
  uint64_t id_bytes_spilled = 0;  // ID mapping: bytes of its spill files
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  int64_t train_count = 0, valid_count = 0, test_count = 0;
  bool splits_from_input = false;  // the input carried its splits (OGB split/, .npz idx_*)
  // largest_component: num_nodes / num_edges above are what was kept; these say what was not.
  int64_t num_components = 0;  // weakly connected components of the whole graph (0: not computed)
  int64_t component_nodes_dropped = 0;
  int64_t component_edges_dropped = 0;
  // edge_split: the split written; num_edges above is the message-passing graph without the
  // valid and test edges.
  std::optional<format::LinkSplitInfo> link_split;
  uint64_t memory_budget_bytes = 0;
  double seconds = 0;
};

// Converts options.input into the dataset directory options.output. Errors name the input file
// and what was expected; with largest_component, also ResourceExhausted when the node table does
// not fit in the memory budget. On failure nothing is left at options.output.
Result<ConvertSummary> ConvertGraph(const ConvertOptions& options);

}  // namespace skiff::convert
