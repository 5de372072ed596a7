// What `skiff convert`, `skiff generate` and `skiff split-edges` share about edge splits
// (convert/edge_split.h): the summary line and the rewrite of a dataset on disk into an output.
//
// Thread safety: plain functions.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "skiff/convert/edge_split.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::cli {

// Prints "edge split   train T / valid V / test X pairs (...)" with the graph's edge count after
// the split.
void PrintEdgeSplit(const format::LinkSplitInfo& split, int64_t edges_after);
// "asked 0.85/0.05/0.1, seed 0", or "given by the input" for a split read from the input's own
// files (OGB), which records no fractions and no seed.
std::string EdgeSplitOrigin(const format::LinkSplitInfo& split);

// Writes `input` (a dataset) with the edge split of `spec` into `output` (created, or replaced
// with `overwrite`), appending `source_note` to the manifest's source. The errors of
// convert::WriteEdgeSplit and of the writer; nothing is left at `output` on failure.
Result<convert::EdgeSplitSummary> SplitEdgesInto(const std::string& input,
                                                 const std::string& output, bool overwrite,
                                                 const convert::EdgeSplitSpec& spec,
                                                 const std::string& source_note);

// Adds `--split-candidates K` (ranking candidates drawn per valid / test pair;
// convert::EdgeSplitSpec::candidates) to `app`, writing into *candidates; it needs `split_edges`.
void AddSplitCandidatesOption(CLI::App& app, int64_t* candidates, CLI::Option* split_edges);

}  // namespace skiff::cli
