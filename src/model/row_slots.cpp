#include "skiff/model/row_slots.h"

#include <algorithm>
#include <limits>
#include <string>

namespace skiff::model {

RowSlots::RowSlots(int64_t num_nodes, int64_t capacity)
    : node_slot_(static_cast<size_t>(num_nodes), -1),
      slot_node_(static_cast<size_t>(capacity), -1),
      stamp_(static_cast<size_t>(capacity), 0),
      referenced_(static_cast<size_t>(capacity), 0) {
  SKIFF_CHECK(num_nodes >= 0 && num_nodes < std::numeric_limits<int32_t>::max());
  SKIFF_CHECK(capacity >= 1 && capacity < std::numeric_limits<int32_t>::max());
}

uint64_t RowSlots::HostBytes(int64_t num_nodes, int64_t capacity) {
  return 4 * static_cast<uint64_t>(num_nodes) + 9 * static_cast<uint64_t>(capacity);
}

void RowSlots::Clear() {
  std::fill(node_slot_.begin(), node_slot_.end(), -1);
  std::fill(slot_node_.begin(), slot_node_.end(), -1);
  std::fill(stamp_.begin(), stamp_.end(), 0);
  std::fill(referenced_.begin(), referenced_.end(), 0);
  used_ = 0;
  hand_ = 0;
  batch_ = 0;
}

int32_t RowSlots::TakeSlot() {
  if (used_ < capacity()) return static_cast<int32_t>(used_++);
  for (;;) {  // at most two turns: a slot not stamped with this batch loses its mark on the first
    const auto slot = static_cast<size_t>(hand_);
    hand_ = hand_ + 1 == capacity() ? 0 : hand_ + 1;
    if (stamp_[slot] == batch_) continue;
    if (referenced_[slot] != 0) {
      referenced_[slot] = 0;
      continue;
    }
    return static_cast<int32_t>(slot);
  }
}

Result<bool> RowSlots::Assign(std::span<const int64_t> ids, std::vector<int64_t>* slots,
                              std::vector<int64_t>* missing) {
  if (static_cast<int64_t>(ids.size()) > capacity()) return false;
  const auto num_nodes = static_cast<int64_t>(node_slot_.size());
  for (const int64_t v : ids) {
    if (v < 0 || v >= num_nodes) {
      return Status::InvalidArgument("row cache: node " + std::to_string(v) + " is not in [0, " +
                                     std::to_string(num_nodes) + ")");
    }
  }
  ++batch_;
  slots->resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    int32_t& held = node_slot_[static_cast<size_t>(ids[i])];
    if (held < 0) {
      const int32_t slot = TakeSlot();
      int32_t& previous = slot_node_[static_cast<size_t>(slot)];
      if (previous >= 0) node_slot_[static_cast<size_t>(previous)] = -1;
      previous = static_cast<int32_t>(ids[i]);
      held = slot;
      missing->push_back(static_cast<int64_t>(i));
      referenced_[static_cast<size_t>(slot)] = 0;  // on probation until a later batch hits it
      ++misses_;
    } else {
      referenced_[static_cast<size_t>(held)] = 1;
      ++hits_;
    }
    stamp_[static_cast<size_t>(held)] = batch_;
    (*slots)[i] = held;
  }
  return true;
}

}  // namespace skiff::model
