// Largest connected component: rewrites a dataset keeping only the nodes of its largest weakly
// connected component (edge direction ignored), as PyG's LargestConnectedComponents transform
// does, for the protocols that evaluate on it (Shchur et al., "Pitfalls of GNN Evaluation").
//
// Two passes over the source dataset's CSR, streamed in bounded chunks:
//   1. Components: a union-find over node IDs (int32 parents when N < 2^31, else int64; path
//      halving, union by size with the size stored negated in the root's entry), fed by the edges
//      of graph.offsets / graph.neighbors. The largest component wins; among equally large ones,
//      the one holding the smallest node ID.
//   2. Rewrite: the same table, renumbered in place, becomes old ID -> new ID (-1 = dropped). Kept
//      nodes get new IDs in increasing old-ID order, so relative order (and sorted neighbour rows)
//      is kept. The CSR, feature rows, labels, the ID map (when the source has one) and the splits
//      are written for the kept nodes into `out`. An edge never joins two components, so a kept
//      node's row keeps all its edges and a dropped node's row is dropped whole.
// Splits: with `keep_splits` (the input carried its own), the source's splits restricted to kept
// nodes and renumbered; otherwise `split` drawn on the component's labels.
//
// Memory: the node table (4 bytes per node when N < 2^31, else 8) plus the kept labels (4 bytes
// per node) must fit in `memory_bytes`, else ResourceExhausted naming --memory; the streaming
// buffers add a fixed ~25 MiB.
//
// Thread safety: WriteLargestComponent may run concurrently for different outputs.
#pragma once

#include <cstdint>

#include "skiff/convert/splits.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

struct ComponentOptions {
  uint64_t memory_bytes = 0;  // budget for the per-node state (see above)
  bool keep_splits = false;   // the source's splits came with the input: filter, do not redraw
  SplitSpec split;            // drawn on the component when !keep_splits
};

struct ComponentSummary {
  int64_t num_components = 0;  // weakly connected components of the source (isolated nodes count)
  int64_t nodes_kept = 0, nodes_dropped = 0;
  int64_t edges_kept = 0, edges_dropped = 0;  // stored (directed) edges
};

// Bytes of per-node state WriteLargestComponent holds for a graph of `num_nodes` nodes.
uint64_t ComponentBytesPerNode(int64_t num_nodes);

// Writes into `out` (which must be empty: no file created yet) the largest component of `source`:
// every data file, the ID map when source has one (`out.temp_dir()`/idmap), and the manifest's
// counts, dtypes, undirected and has_id_map; the caller sets name and source and commits. Returns
// the counts. InvalidArgument when the source has an edge split (Manifest::link_split: split the
// component's edges instead); ResourceExhausted when the node table does not fit in
// options.memory_bytes;
// Corruption when the source's CSR is inconsistent (offsets decrease or leave [0, E], a neighbour
// outside [0, N)); errors of the reads and writes, naming the file.
Result<ComponentSummary> WriteLargestComponent(const format::Dataset& source,
                                               format::DatasetWriter& out,
                                               const ComponentOptions& options);

}  // namespace skiff::convert
