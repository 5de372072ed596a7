// k-way Fiduccia-Mattheyses (FM) refinement of a partition of a graph held in memory: GREM's last
// step on graphs whose adjacency fits its memory budget (partitioner.cpp, docs/partition.md).
//
// GREM's streaming passes move a vertex only when the move gains. FM also makes the best move when
// it loses, locks the moved vertex, and keeps the moves up to the best point of the sequence, so it
// leaves local minima that single improving moves cannot (a boundary that must shift by several
// vertices before the cut drops). A pass visits the boundary vertices best gain first (a lazy max
// heap, stale entries re-scored when popped), stops after `stall_moves` moves without a new best or
// when its work bound is spent, and rolls back to its best prefix.
//
// Thread safety: plain functions over caller-owned values.
#pragma once

#include <cstdint>
#include <vector>

#include "src/partition/multilevel.h"

namespace skiff::partition {

struct FmOptions {
  int max_passes = 8;          // passes, at most; refinement stops at one that gains nothing
  int64_t stall_moves = 1000;  // moves without a new best cut before a pass stops
  // Adjacency entries the passes may visit together (scoring moves): `work_per_entry` per entry of
  // the graph, and at least `min_work`. Bounds the time on large graphs, where each move re-scores
  // its neighbours over their whole rows, to a few streaming passes' worth; small graphs converge.
  double work_per_entry = 16.0;
  int64_t min_work = int64_t{1} << 26;
  int64_t max_degree = 0;  // vertices of higher degree are never moved (0: no limit)
};

struct FmResult {
  int64_t gain = 0;   // cut weight removed
  int64_t moves = 0;  // moves kept
  int passes = 0;
};

// Bytes FmRefine allocates for a graph of `num_vertices` vertices, at most (beside the graph,
// `part` and `sizes`): the heap, the locks and the move log.
uint64_t FmRefineBytes(int64_t num_vertices, int k);

// Refines `*part` (a part in [0, k) for every vertex of `g`; `*sizes` the parts' weights, kept in
// step). `g` is symmetric: each edge appears in both endpoints' rows, with its weight (all 1 when
// `g.edge_weight` is empty). No move makes a part heavier than `cap`, and the cut (the weight of
// edges between parts) never grows: a pass keeps only its best prefix, none when it gains nothing.
FmResult FmRefine(const WeightedGraph& g, int k, int64_t cap, const FmOptions& options,
                  std::vector<int32_t>* part, std::vector<int64_t>* sizes);

}  // namespace skiff::partition
