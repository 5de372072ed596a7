// BoundedQueue<T>: a named, fixed-capacity, multi-producer multi-consumer queue between two
// pipeline stages.
//
// Push blocks while the queue is full; Pop blocks while it is empty. The capacity is what bounds
// the memory of items in flight between two stages (the memory budget counts it). Time spent
// blocked is recorded as stall time of the calling stage's StageTimer (when one is given), and in
// the queue's own totals (push_wait_seconds: the consumer is the bottleneck; pop_wait_seconds: the
// producer is).
//
// Shutting down:
//   Close()  -- producers are done: Push fails from now on; Pop drains what is queued, then returns
//               nullopt.
//   Cancel() -- abort (an error elsewhere): queued items are dropped, every blocked Push and Pop
//               returns at once (false / nullopt), and so does every later call.
// Both are idempotent and may be called from any thread, so a stage that fails can always unblock
// its neighbours (see Pipeline).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>

#include "skiff/mutex.h"
#include "skiff/pipeline/stage_stats.h"
#include "skiff/status.h"

namespace skiff::pipeline {

// The type-erased part a Pipeline needs to cancel every queue on error.
class QueueControl {
 public:
  virtual ~QueueControl() = default;
  virtual void Close() = 0;
  virtual void Cancel() = 0;
  virtual const std::string& name() const = 0;
};

template <typename T>
class BoundedQueue final : public QueueControl {
 public:
  // `capacity` >= 1 items.
  BoundedQueue(std::string name, size_t capacity) : name_(std::move(name)), capacity_(capacity) {
    SKIFF_CHECK_MSG(capacity >= 1, "a queue needs room for at least one item");
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks until there is room, then enqueues. False (item dropped) when closed or cancelled.
  bool Push(T item, StageTimer* timer = nullptr) {
    MutexLock lock(&mu_);
    if (items_.size() >= capacity_ && !closed_ && !cancelled_) {
      const auto start = std::chrono::steady_clock::now();
      while (items_.size() >= capacity_ && !closed_ && !cancelled_) not_full_.Wait(&mu_);
      const auto waited = std::chrono::steady_clock::now() - start;
      push_wait_ += waited;
      if (timer != nullptr) timer->AddStall(waited);
    }
    if (closed_ || cancelled_) return false;
    items_.push_back(std::move(item));
    not_empty_.Signal();
    return true;
  }

  // Blocks until an item is available. nullopt when closed and drained, or cancelled.
  std::optional<T> Pop(StageTimer* timer = nullptr) {
    MutexLock lock(&mu_);
    if (items_.empty() && !closed_ && !cancelled_) {
      const auto start = std::chrono::steady_clock::now();
      while (items_.empty() && !closed_ && !cancelled_) not_empty_.Wait(&mu_);
      const auto waited = std::chrono::steady_clock::now() - start;
      pop_wait_ += waited;
      if (timer != nullptr) timer->AddStall(waited);
    }
    if (cancelled_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.Signal();
    return item;
  }

  // Pop, waiting at most `timeout`: nullopt with *timed_out set when nothing came by then.
  std::optional<T> PopFor(std::chrono::nanoseconds timeout, bool* timed_out) {
    MutexLock lock(&mu_);
    *timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (items_.empty() && !closed_ && !cancelled_) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) {
        *timed_out = true;
        return std::nullopt;
      }
      not_empty_.WaitFor(&mu_, left);
    }
    if (cancelled_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.Signal();
    return item;
  }

  void Close() override {
    MutexLock lock(&mu_);
    closed_ = true;
    not_empty_.SignalAll();
    not_full_.SignalAll();
  }
  void Cancel() override {
    std::deque<T> dropped;
    {
      MutexLock lock(&mu_);
      cancelled_ = true;
      dropped.swap(items_);
      not_empty_.SignalAll();
      not_full_.SignalAll();
    }
    // `dropped` (possibly holding pins or large buffers) is destroyed outside the lock.
  }

  const std::string& name() const override { return name_; }
  size_t capacity() const { return capacity_; }
  size_t size() const {
    MutexLock lock(&mu_);
    return items_.size();
  }
  bool cancelled() const {
    MutexLock lock(&mu_);
    return cancelled_;
  }
  double push_wait_seconds() const {
    MutexLock lock(&mu_);
    return std::chrono::duration<double>(push_wait_).count();
  }
  double pop_wait_seconds() const {
    MutexLock lock(&mu_);
    return std::chrono::duration<double>(pop_wait_).count();
  }

 private:
  const std::string name_;
  const size_t capacity_;
  mutable Mutex mu_;
  CondVar not_full_;
  CondVar not_empty_;
  std::deque<T> items_ SKIFF_GUARDED_BY(mu_);
  bool closed_ SKIFF_GUARDED_BY(mu_) = false;
  bool cancelled_ SKIFF_GUARDED_BY(mu_) = false;
  std::chrono::nanoseconds push_wait_ SKIFF_GUARDED_BY(mu_){0};
  std::chrono::nanoseconds pop_wait_ SKIFF_GUARDED_BY(mu_){0};
};

}  // namespace skiff::pipeline
