// Multilevel placement of a small weighted graph held in memory: GREM's cluster graph, whose
// vertices are clusters of the streamed graph (partitioner.cpp, ClusterPlace). Coarsen by
// size-bounded label propagation, place the coarsest graph greedily in BFS order under the Fennel
// objective (whole clusters under the cap), then project and refine level by level.
//
// Thread safety: plain functions over caller-owned values.
#pragma once

#include <cstdint>
#include <vector>

namespace skiff::partition {

// A small weighted graph held in memory (the cluster graph and its coarsenings).
struct WeightedGraph {
  std::vector<int64_t> offsets;      // size C+1
  std::vector<int32_t> adj;          // neighbour clusters (no self-loops)
  std::vector<int64_t> edge_weight;  // parallel to adj
  std::vector<int64_t> weight;       // vertices per cluster
  int32_t size() const { return static_cast<int32_t>(weight.size()); }
};

// A part in [0, k) for every vertex of `fine`; a part takes a cluster only while its weight stays
// within `cap` (or no part can), `alpha` weighs part sizes against cut edges (Fennel).
std::vector<int32_t> MultilevelPlace(const WeightedGraph& fine, int k, int64_t cap, double alpha);

}  // namespace skiff::partition
