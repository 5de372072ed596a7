// RowSlots: the host's index of a device row cache -- which of `capacity` device slots holds which
// node's feature row -- for a model whose device cannot hold every feature row (the CUDA model when
// the features exceed --device-memory; docs/cuda.md, "A row cache for features that do not fit").
//
// Assign() takes one batch's input nodes and gives each a slot: the slot that already holds its
// row (a hit), or a slot for its row to be uploaded into (a miss): a never-used slot while there
// are any, then one chosen by CLOCK (second chance: a slot hit since the hand last passed is
// skipped once; a newly uploaded row is not marked, so rows used by one batch only go before rows
// batches keep coming back to -- hubs). A slot the same batch uses is never chosen, so a batch's
// rows are all in the cache together. A row is uploaded again only after it was evicted.
//
// Contract with the device side: the caller uploads the missed rows into their slots before the
// batch reads the cache, and orders those writes after every earlier batch's reads of the cache
// (one stream), because a slot the previous batch read may be reassigned here.
//
// Memory: 4 bytes per node and 8 per slot (HostBytes, which the memory plan counts). Cost: a few
// cache misses per input row (its node's entry, its slot's state), overlapped by prefetching a few
// rows ahead.
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/status.h"

namespace skiff::model {

class RowSlots {
 public:
  // Nodes [0, num_nodes) with num_nodes < 2^31, and 1 <= capacity < 2^31 slots.
  RowSlots(int64_t num_nodes, int64_t capacity);

  static uint64_t HostBytes(int64_t num_nodes, int64_t capacity);

  // Fills slots[i] with the slot of ids[i], and appends to *missing the positions i whose rows must
  // be uploaded into slots[i] (each node once; a node repeated in `ids` shares the first one's
  // slot). Returns false, changing nothing, when `ids` has more entries than there are slots: the
  // caller then uploads the batch's rows without the cache. InvalidArgument for an ID out of range.
  Result<bool> Assign(std::span<const int64_t> ids, std::vector<int64_t>* slots,
                      std::vector<int64_t>* missing);

  // Forgets every assignment (the device's rows can no longer be trusted, e.g. after a failed
  // upload); the hit and miss counts stay.
  void Clear();

  int64_t capacity() const { return static_cast<int64_t>(slot_node_.size()); }
  // Rows assigned as hits and as misses since construction.
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  // A slot for a missed row: a never-used one, or CLOCK's victim among the slots not stamped with
  // the current batch (one exists: the batch has no more rows than slots).
  int32_t TakeSlot();

  // A slot's state: the batch that last used it (the low 31 bits) and whether it was hit since the
  // hand last passed (kReferenced).
  static constexpr uint32_t kReferenced = uint32_t{1} << 31;
  static constexpr uint32_t kStampMask = kReferenced - 1;

  std::vector<int32_t> node_slot_;  // per node: its slot, or -1
  std::vector<int32_t> slot_node_;  // per slot: its node, or -1 (never used)
  std::vector<uint32_t> state_;     // per slot
  int64_t used_ = 0;                // slots [0, used_) have held a row
  int64_t hand_ = 0;
  uint32_t batch_ = 0;  // stamps start at 0 (never used), so the first batch is 1
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace skiff::model
