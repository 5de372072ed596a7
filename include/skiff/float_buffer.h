// FloatBuffer: a std::vector<float> whose resize() leaves the new elements uninitialised.
//
// A batch's feature staging is tens of MB, written in full by whoever fills it (a gather, an
// aggregated read, a replay); value-initialising it first wrote it twice, and for a fresh
// allocation that zero fill also took every page fault before the first row arrived, on the
// pipeline's critical path. Every other operation is std::vector's.
//
// Contract: the code that resizes a FloatBuffer writes every element before anything reads it.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace skiff {

// An allocator whose construct() with no arguments default-initialises (leaves a trivial type
// uninitialised) instead of value-initialising; every other construct is std::allocator's.
template <typename T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>& other) noexcept : std::allocator<T>(other) {}

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using FloatBuffer = std::vector<float, DefaultInitAllocator<float>>;

}  // namespace skiff
