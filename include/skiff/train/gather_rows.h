// Gathering per-node results that the ranks of an owned-partition job computed for their own nodes
// onto rank 0: prediction (Trainer::Predict, `train --export`) computes each node on the rank that
// owns it, and rank 0 writes every node's row.
//
// Each rank hands in its rows -- a position in the output, one int32 label and `width` floats --
// and rank 0 receives every rank's rows at their positions, bitwise as they were computed. The
// rows travel in rounds of personalised exchanges (Communicator::AllToAll) of at most
// `round_bytes` per rank, so no rank packs all of its rows into one message; every rank joins
// every round, also one with no rows left.
//
// Thread safety: one thread (the communicator's).
#pragma once

#include <cstdint>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/status.h"

namespace skiff::train {

// One rank's rows: row i goes to position positions[i] and holds labels[i] and
// values[i * width, (i + 1) * width).
struct PositionedRows {
  std::vector<int64_t> positions;
  std::vector<int32_t> labels;
  std::vector<float> values;
};

// Every rank calls it with the same `n` (the output's rows), `width` and `round_bytes`. On rank 0
// *labels becomes n labels and *values n x width floats, each row the one some rank sent for its
// position; on the other ranks both are left empty. Internal, on rank 0, when the ranks' rows do
// not cover the positions 0..n-1 exactly once (a programmer error of the caller, reported rather
// than written); errors of the exchanges pass through.
Status GatherRowsToLead(dist::Communicator& comm, const PositionedRows& mine, int64_t n,
                        int64_t width, uint64_t round_bytes, std::vector<int32_t>* labels,
                        std::vector<float>* values);

}  // namespace skiff::train
