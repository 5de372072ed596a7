// Gathering per-node results that the ranks of an owned-partition job compute for their own nodes
// onto rank 0: prediction (Trainer::Predict, `train --export`) computes each node on the rank that
// owns it, and rank 0 writes every node's row.
//
// A row is a position in the output, one int32 label and `width` floats. Each rank adds the rows
// it computes (Add), and every rank sends what it added since the last Send to rank 0 in one
// personalised exchange (Communicator::AllToAll) whenever the caller's ranks are in step -- after
// each plan batch, so that a rank never holds more than one batch's rows; ranks that compute their
// shares apart send everything at the end (SendAll), in rounds. Rank 0 writes its own
// rows in place and the others' as they arrive, bitwise as they were computed, and Finish checks
// that every position was written exactly once.
//
// Thread safety: one thread (the communicator's).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/status.h"

namespace skiff::train {

class RowsToLead {
 public:
  // Every rank makes one with the same `n` (the output's rows) and `width`. On rank 0 *labels
  // becomes n labels (-1 until written) and *values n x width floats; on the other ranks both are
  // cleared and stay empty. The outputs and `comm` must outlive the object.
  RowsToLead(dist::Communicator& comm, int64_t n, int64_t width, std::vector<int32_t>* labels,
             std::vector<float>* values);

  // One row of this rank's (values.size() == width). Internal for a position outside [0, n) or
  // one already written (checked where the row lands: at once on rank 0, at the next Send on
  // the others).
  Status Add(int64_t position, int32_t label, std::span<const float> values);
  // Collective: every rank's rows added since the last Send reach rank 0. Errors of the exchange,
  // and on rank 0 Add's, pass through.
  Status Send();
  // Collective, for ranks that are not in step while they compute (each ran its own share of a
  // pass, Add-ing as it went): every rank's rows added since the last Send reach rank 0 in rounds
  // of at most `round_bytes` per rank (>= one row; a message stays far below MPI's 2 GiB), as
  // many as the rank with the most rows needs. Errors as Send's.
  Status SendAll(int64_t round_bytes = int64_t{64} << 20);
  // After the last Send: Internal, on rank 0, when some position was never written.
  Status Finish() const;

 private:
  Status Write(int from, int64_t position, const char* label, const char* values);
  // Send of at most `rows` of the rows pending (the first ones).
  Status SendSome(int64_t rows);

  dist::Communicator& comm_;
  const int64_t n_, width_;
  std::vector<int32_t>* labels_;
  std::vector<float>* values_;
  std::vector<uint8_t> written_;  // rank 0: per position
  int64_t written_count_ = 0;     // rank 0
  // Other ranks: the rows since the last Send, the first `sent_` of which went in an earlier round.
  int64_t sent_ = 0;
  std::vector<int64_t> positions_;
  std::vector<int32_t> pending_labels_;
  std::vector<float> pending_values_;
};

}  // namespace skiff::train
