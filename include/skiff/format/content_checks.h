// What a dataset's files must hold beyond what their checksums prove (docs/FORMAT.md, "What
// readers check"). A checksum shows that a file is the one that was written, not that what was
// written is consistent: a file written by another tool, by a bug or by hand can carry valid
// checksums. Every reader checks what it relies on as it reads, with these functions, and `skiff
// info --verify` runs them all, so a reader and verify report the same error: Corruption naming
// the file, the node (or entry, or pair) and the value.
//
// The scanners (FirstIdOutOfRange, FirstNonFinite) are the hot loops of the checks made on every
// read: they return the index of the first bad value, or -1, and leave the message to the caller,
// which knows which node an index belongs to.
//
// Thread safety: free functions without state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::format {

// graph.offsets entries [first, first + values.size()); `previous` is entry first - 1 (ignored
// when first == 0). OK when the first entry is 0, no entry is below the one before it or above
// num_edges, and entry num_nodes (when in range) is num_edges; else Corruption naming `path`, the
// entry (the node whose row it bounds) and the value.
Status CheckOffsets(const std::string& path, std::span<const int64_t> values, int64_t first,
                    int64_t previous, int64_t num_nodes, int64_t num_edges);

// Index of the first ID outside [0, num_nodes), or -1.
int64_t FirstIdOutOfRange(std::span<const int32_t> ids, int64_t num_nodes);
int64_t FirstIdOutOfRange(std::span<const int64_t> ids, int64_t num_nodes);
// The error for node `node`'s neighbour `value`, outside [0, num_nodes), in `path`.
Status NeighborOutOfRange(const std::string& path, int64_t node, int64_t value, int64_t num_nodes);

// Index of the first NaN or infinity, or -1; half-precision values as their IEEE bits.
int64_t FirstNonFinite(std::span<const float> values);
int64_t FirstNonFiniteHalf(std::span<const uint16_t> values);
// The error for feature `column` of node `node` (`value`, NaN or infinite) in `path`.
Status NonFiniteFeature(const std::string& path, int64_t node, int64_t column, float value);

// A hash of the directed edge (u, v). Summed over a set of edges it compares two sets without
// holding either: an undirected graph's sum equals that of its reversed edges, and the edge
// buckets' sum equals the graph's (a mismatch proves a difference; a random 64-bit coincidence is
// the only way a difference passes).
uint64_t EdgeHash(int64_t u, int64_t v);

// OK when `ids` (relabel.old_ids, node v at index v) is a permutation of [0, ids.size()); else
// Corruption naming `path`, the node and the ID that is out of range or taken. One bit per node.
Status CheckPermutation(const std::string& path, std::span<const int64_t> ids);

// OK when no node is in two of `splits` (node IDs in [0, num_nodes), as Dataset::LoadSplit
// checks); else Corruption naming the node and both files (`names`, one per split). One byte per
// node.
Status CheckSplitsDisjoint(const std::string& dir,
                           std::span<const std::vector<int64_t>* const> splits,
                           std::span<const char* const> names, int64_t num_nodes);

// The pairs of an edge split's positive files (each 2*count int64, (src, dst) interleaved,
// endpoints in range): OK when no pair is in two of them (as (min, max) when `undirected`); else
// Corruption naming the file, the pair index, the pair and the other file. Memory: a hash set of
// the pairs of all files but the first, which is streamed through it (pass the largest first).
Status CheckEdgeSplitDisjoint(const std::string& dir, bool undirected,
                              std::span<const std::vector<int64_t>* const> pairs,
                              std::span<const char* const> names);

}  // namespace skiff::format
