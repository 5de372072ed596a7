#include "skiff/model/row_slots.h"

#include <algorithm>
#include <limits>
#include <string>

#include "skiff/prefetch.h"

namespace skiff::model {

RowSlots::RowSlots(int64_t num_nodes, int64_t capacity)
    : node_slot_(static_cast<size_t>(num_nodes), -1),
      slot_node_(static_cast<size_t>(capacity), -1),
      state_(static_cast<size_t>(capacity), 0) {
  SKIFF_CHECK(num_nodes >= 0 && num_nodes < std::numeric_limits<int32_t>::max());
  SKIFF_CHECK(capacity >= 1 && capacity < std::numeric_limits<int32_t>::max());
}

uint64_t RowSlots::HostBytes(int64_t num_nodes, int64_t capacity) {
  return 4 * static_cast<uint64_t>(num_nodes) + 8 * static_cast<uint64_t>(capacity);
}

void RowSlots::Clear() {
  std::fill(node_slot_.begin(), node_slot_.end(), -1);
  std::fill(slot_node_.begin(), slot_node_.end(), -1);
  std::fill(state_.begin(), state_.end(), 0);
  used_ = 0;
  hand_ = 0;
  batch_ = 0;
}

int32_t RowSlots::TakeSlot() {
  if (used_ < capacity()) return static_cast<int32_t>(used_++);
  for (;;) {  // at most two turns: a slot not stamped with this batch loses its mark on the first
    // The node entry an eviction a few slots on would clear (the hand moves in order).
    constexpr int64_t kAhead = 16;
    const int64_t ahead = (hand_ + kAhead) % capacity();  // capacity may be below kAhead
    const int32_t next_node = slot_node_[static_cast<size_t>(ahead)];
    if (next_node >= 0) PrefetchRead(&node_slot_[static_cast<size_t>(next_node)]);
    uint32_t& state = state_[static_cast<size_t>(hand_)];
    const auto slot = static_cast<int32_t>(hand_);
    hand_ = hand_ + 1 == capacity() ? 0 : hand_ + 1;
    if ((state & kStampMask) == batch_) continue;
    if ((state & kReferenced) != 0) {
      state &= kStampMask;
      continue;
    }
    return slot;
  }
}

Result<bool> RowSlots::Assign(std::span<const int64_t> ids, std::vector<int64_t>* slots,
                              std::vector<int64_t>* missing) {
  const auto num_nodes = static_cast<int64_t>(node_slot_.size());
  for (const int64_t v : ids) {
    if (v < 0 || v >= num_nodes) {
      return Status::InvalidArgument("row cache: node " + std::to_string(v) + " is not in [0, " +
                                     std::to_string(num_nodes) + ")");
    }
  }
  if (static_cast<int64_t>(ids.size()) > capacity()) return false;
  batch_ = (batch_ + 1) & kStampMask;
  if (batch_ == 0) {  // wrapped: no old stamp may pass for this batch's (TakeSlot's termination)
    for (uint32_t& state : state_) state &= kReferenced;
    batch_ = 1;
  }
  slots->resize(ids.size());
  // Rows kAhead apart: a node's entry is fetched two steps ahead of its use, its slot's state one.
  constexpr size_t kAhead = 8;
  const size_t n = ids.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + 2 * kAhead < n) PrefetchRead(&node_slot_[static_cast<size_t>(ids[i + 2 * kAhead])]);
    if (i + kAhead < n) {
      const int32_t ahead = node_slot_[static_cast<size_t>(ids[i + kAhead])];
      if (ahead >= 0) PrefetchRead(&state_[static_cast<size_t>(ahead)]);
    }
    int32_t& held = node_slot_[static_cast<size_t>(ids[i])];
    if (held < 0) {
      const int32_t slot = TakeSlot();
      int32_t& previous = slot_node_[static_cast<size_t>(slot)];
      if (previous >= 0) node_slot_[static_cast<size_t>(previous)] = -1;
      previous = static_cast<int32_t>(ids[i]);
      held = slot;
      missing->push_back(static_cast<int64_t>(i));
      state_[static_cast<size_t>(slot)] = batch_;  // on probation until a later batch hits it
      ++misses_;
    } else {
      state_[static_cast<size_t>(held)] = batch_ | kReferenced;
      ++hits_;
    }
    (*slots)[i] = held;
  }
  return true;
}

}  // namespace skiff::model
