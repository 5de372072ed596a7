// Edge split for link prediction: rewrites a dataset with held-out edges (docs/FORMAT.md, "Edge
// splits"), the way GAE, OGB's link tasks and PyG's RandomLinkSplit do.
//
// Units: on an undirected dataset (the manifest says so) an undirected edge {u, v}, stored in the
// graph both ways and in the split files once as (min, max); on a directed one a stored edge
// (u, v) (its reverse, when stored, meets the same verdict: the hash below is symmetric).
// Self-loops are never held out: they stay in the graph and in no split file. Selection: each unit
// goes to valid with probability valid_fraction, to test with test_fraction, to train with
// train_fraction, and to none otherwise, decided by a 64-bit hash of (seed, min(u, v), max(u, v)).
// Both stored directions of an edge therefore agree while the graph is streamed one row at a time,
// and a split is a function of (graph, spec) only. The counts are binomial around the fractions
// (for E units, the valid count has mean E*valid_fraction and standard deviation
// sqrt(E*valid_fraction*(1-valid_fraction))), not exact. The message-passing graph (graph.offsets /
// graph.neighbors) loses the valid and test edges (both directions); train edges stay in it (they
// are the positives a trainer scores), as do edges in no split. Non-edges for valid and test, one
// per positive: uniform pairs (u != v) that are no edge of the source graph (in either direction
// when undirected; held-out edges included), none repeated in either file, drawn from the seed.
// Every other file (features, labels, node splits, relabel.old_ids) is copied unchanged, and
// idmap/ copied as it is.
//
// With EdgeSplitSpec::candidates = K > 0 (directed datasets only), each valid and test pair also
// gets K ranking candidates: destinations drawn uniformly from [0, N), row i of a split from
// Rng(HashKey(seed, stream of the split, i)) alone, so a row depends on the seed and its pair's
// position only. They are not filtered (OGB ogbl-citation2 draws its 1000 alike): a candidate may
// be the pair's own destination, which the ranking counts as a tie, or another edge.
//
// Memory: one streamed chunk of rows (~16 MiB), the valid and test pairs (16 bytes each), a hash
// set of the non-edges drawn (about 48 bytes each) and a 4 MiB chunk of candidates.
//
// Thread safety: WriteEdgeSplit may run concurrently for different outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

struct EdgeSplitSpec {
  double train_fraction = 0.85, valid_fraction = 0.05, test_fraction = 0.1;
  uint64_t seed = 0;
  // Ranking candidates drawn per valid / test pair (OGB ogbl-citation2's protocol: 1000); 0: none.
  // Directed datasets only (docs/FORMAT.md, "Ranking candidates").
  int64_t candidates = 0;
};

// Parses "TRAIN,VALID,TEST" (three fractions, each in [0, 1], summing to at most 1).
// InvalidArgument naming `option` (e.g. "--split-edges") and the malformed part.
Result<EdgeSplitSpec> ParseEdgeSplitSpec(const std::string& text, uint64_t seed,
                                         const std::string& option);

struct EdgeSplitSummary {
  format::LinkSplitInfo split;  // what the manifest records
  int64_t edges_before = 0;     // stored (directed) edges of the source
  int64_t edges_after = 0;      // of the message-passing graph written
};

// Writes into `out` (which must be empty: no file created yet) `source` with the edge split of
// `spec`: every file, idmap/ when the source has one, and the whole manifest (name and source
// copied; the caller may change them, then commits). InvalidArgument when the source already has
// an edge split or is partitioned (split first; `skiff partition` carries the split), or for a
// spec outside [0, 1], for candidates on an undirected dataset or a negative count, or when the
// graph is too dense to hold the non-edges asked for (not all
// found within 64 draws per non-edge); Corruption when the source's CSR is
// inconsistent; errors of the reads and writes, naming the file.
Result<EdgeSplitSummary> WriteEdgeSplit(const format::Dataset& source, format::DatasetWriter& out,
                                        const EdgeSplitSpec& spec);

// An edge split the input gives (OGB's link-prediction split files) instead of one drawn here.
// Pairs are (src, dst) interleaved, IDs in [0, N) of the source dataset.
struct GivenEdgeSplit {
  std::vector<int64_t> train, valid, test;   // positives
  std::vector<int64_t> valid_neg, test_neg;  // negatives (may be empty)
  // Ranking candidates (directed datasets only): `candidates` per valid / test pair, row-major in
  // pair order (valid.size() / 2 x candidates, test likewise); 0: none.
  int64_t candidates = 0;
  std::vector<int64_t> valid_cand, test_cand;
  std::string origin;  // where they came from, for messages and the manifest
};

// What WriteGivenEdgeSplit dropped or removed to meet the format's rules (docs/FORMAT.md, "Edge
// splits"); each count is of pairs, except graph_edges_removed (stored edges).
struct GivenSplitReport {
  int64_t self_loops = 0;           // positives (u, u): never held out
  int64_t repeated = 0;             // a positive repeated within its file (after normalising)
  int64_t train_also_held_out = 0;  // train pairs that are also valid or test pairs
  int64_t train_not_in_graph = 0;   // train pairs that are no edge of the graph
  int64_t negatives_dropped = 0;    // negatives that are self-loops, repeated, positives or edges
  int64_t graph_edges_removed = 0;  // stored edges of valid and test pairs taken out of the graph
};

// Writes into `out` (empty, as for WriteEdgeSplit) `source` with the given split. Units as in
// WriteEdgeSplit: on an undirected dataset each pair is normalised to (min, max). Valid and test
// pairs are removed from the message-passing graph (both directions when undirected); train pairs
// stay (and must be edges of it); negatives must be no edge of the source graph and no valid or
// test pair. What breaks those rules is dropped and counted in *report (InvalidArgument, naming the
// pair, for a pair in both valid and test). The manifest's link_split records the counts, with
// fractions and seed 0 (nothing was drawn), and its source the origin. Ranking candidates follow
// their pairs (a dropped pair's row goes with it); InvalidArgument for candidates on an undirected
// dataset or rows that do not match the pairs.
Result<EdgeSplitSummary> WriteGivenEdgeSplit(const format::Dataset& source,
                                             format::DatasetWriter& out, GivenEdgeSplit given,
                                             GivenSplitReport* report);

}  // namespace skiff::convert
