// Streaming graph partitioning: hash/random, LDG, Fennel, their restreaming variants, and GREM.
//
// All algorithms share one streaming core: the vertices are visited in a stream order (natural,
// random blocks, or BFS-like) in chunks of rows read from a GraphSource; the state is O(N + k)
// (a part per vertex, part sizes, and for GREM a small per-vertex history) plus one chunk of rows.
// Balance is a hard constraint: every part holds at most floor((1 + eps) * ceil(N / k)) vertices
// (and, when a training mask is given and balance_train is set, at most
// floor((1 + eps) * ceil(T / k)) training vertices whenever that can be met; see
// docs/partition.md).
//
// GREM (greedy streaming with refinement) places each vertex greedily by the Fennel objective and
// then keeps refining earlier placements while streaming: a placed vertex placed with little
// information is re-scored when it is met again as a neighbour, each chunk is swept again after it
// is placed, and later passes move vertices whose (history-smoothed) gain for another part is
// positive and whose target part has room. `refine = false` turns all of that off (the passes
// after the first then restream, as ReFennel), so frozen and refined placement are one switch.
//
// Deterministic: the result depends only on the graph, the options and the seed (not on
// `threads`). Thread safety: PartitionGraph may be called concurrently on distinct sources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/partition/graph_source.h"
#include "skiff/status.h"

namespace skiff::partition {

enum class Algorithm { kRandom, kLdg, kFennel, kGrem };
enum class StreamOrder { kNatural, kRandom, kBfs };

const char* AlgorithmName(Algorithm a);
Result<Algorithm> ParseAlgorithm(const std::string& name);  // "random"|"hash"|"ldg"|"fennel"|"grem"
const char* StreamOrderName(StreamOrder o);
Result<StreamOrder> ParseStreamOrder(const std::string& name);  // "natural"|"random"|"bfs"

struct PartitionerOptions {
  int k = 16;
  Algorithm algorithm = Algorithm::kGrem;
  int passes = 0;  // 0: the algorithm's default (1 for random/LDG/Fennel, 8 for GREM; GREM stops
                   // early once a pass moves almost nothing)
  double eps = 0.03;
  uint64_t seed = 1;
  StreamOrder order = StreamOrder::kNatural;
  bool refine = true;             // GREM only: refine earlier placements while streaming
  int64_t chunk_edges = 1 << 20;  // edges per streamed chunk (rows are never split)
  int threads = 2;                // scoring threads for refinement sweeps (1 = caller only)
  // GREM: the memory for building the cluster graph, in 16-byte entries (at least 65536). The
  // graph may have half as many distinct pairs of clusters as entries; with more, GREM places
  // vertex by vertex instead. 0: chunk_edges.
  int64_t cluster_graph_entries = 0;
  // Optional: 1 for training vertices (size N). Borrowed; must outlive the call.
  const std::vector<uint8_t>* train_mask = nullptr;
  bool balance_train = false;
  bool show_progress = false;
};

struct Partitioning {
  std::vector<int32_t> part;         // part of each vertex, in [0, k)
  std::vector<int64_t> part_sizes;   // size k
  std::vector<int64_t> train_sizes;  // size k when a train mask was given, else empty
  int64_t capacity = 0;              // the balance bound on part sizes
  int64_t cut_edges = 0;             // stored edges whose endpoints lie in different parts
  int64_t num_edges = 0;
  int64_t moves = 0;  // refinement / restreaming moves made
  double edge_cut_fraction() const {
    return num_edges ? static_cast<double>(cut_edges) / static_cast<double>(num_edges) : 0.0;
  }
  // max part size / ceil(N/k) - 1
  double imbalance() const;
};

// Partitions `graph` into options.k parts. Returns InvalidArgument for k < 1, k > N (when N > 0)
// or eps < 0, a train mask of the wrong size; errors from reading the graph (Corruption, IOError).
Result<Partitioning> PartitionGraph(const GraphSource& graph, const PartitionerOptions& options);

// Counts stored edges (u, v) with part[u] != part[v], streaming `graph` in chunks.
Result<int64_t> CountCutEdges(const GraphSource& graph, const std::vector<int32_t>& part,
                              int64_t chunk_edges = 1 << 20);

}  // namespace skiff::partition
