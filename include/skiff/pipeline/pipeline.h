// Pipeline: runs stages on their own threads, connected by BoundedQueues, and shuts all of them
// down cleanly when one fails.
//
// A stage is a function returning Status, run on `threads` threads (each thread calls it once with
// its own StageContext). A stage normally loops "pop input, work, push output" until its input
// queue returns nullopt, then returns OK. When the last thread of a stage returns OK, the stage's
// output queues (AddStage's `closes`) are Close()d, so the next stage drains and finishes in turn.
//
// Errors: the first non-OK Status returned by any stage thread is kept; every registered queue is
// then Cancel()led and the pipeline's cancelled() flag set, which unblocks every other thread
// (their Push/Pop return false/nullopt), so Run() always returns: with OK when every stage returned
// OK, otherwise with that first error (later errors, and the Aborted statuses of stages that merely
// saw the cancellation, are dropped). A stage that waits on something other than a queue (a
// buffer-pool pin, a reorder slot) must poll cancelled() or be woken by an OnCancel hook.
//
// Thread safety: configure (AddQueue/AddStage/OnCancel) from one thread, then call Run() once.
// StageContext methods may be called from the stage's own thread; Cancel() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "skiff/mutex.h"
#include "skiff/pipeline/bounded_queue.h"
#include "skiff/pipeline/stage_stats.h"
#include "skiff/status.h"

namespace skiff::pipeline {

class Pipeline;

// What a stage thread gets: its timer (queue waits count as stall), its index among the stage's
// threads, and the pipeline's cancellation flag.
class StageContext {
 public:
  StageTimer* timer() { return &timer_; }
  int thread_index() const { return thread_index_; }
  bool cancelled() const;
  void AddItems(int64_t n) { counters_->AddItems(n); }

 private:
  friend class Pipeline;
  StageContext(Pipeline* pipeline, StageCounters* counters, int thread_index)
      : pipeline_(pipeline), counters_(counters), timer_(counters), thread_index_(thread_index) {}
  Pipeline* pipeline_;
  StageCounters* counters_;
  StageTimer timer_;
  int thread_index_;
};

using StageFn = std::function<Status(StageContext&)>;

class Pipeline {
 public:
  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Registers a queue so an error anywhere cancels it. The queue must outlive Run().
  void AddQueue(QueueControl* queue);
  // Adds a stage run on `threads` (>= 1) threads; when all of them return OK, `closes` are closed.
  void AddStage(std::string name, int threads, StageFn fn, std::vector<QueueControl*> closes = {});
  // Called (once, on the thread that first failed or called Cancel) after the queues are cancelled.
  void OnCancel(std::function<void()> hook);

  // Runs every stage to completion. Returns OK or the first error (see class comment).
  Status Run();
  // Aborts from outside (e.g. a signal handler thread): Run() returns `reason`.
  void Cancel(Status reason);
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Per-stage statistics, in AddStage order; complete after Run() returns.
  std::vector<StageStats> stats() const;
  double wall_seconds() const { return wall_seconds_; }

 private:
  struct Stage {
    std::string name;
    int threads;
    StageFn fn;
    std::vector<QueueControl*> closes;
    std::unique_ptr<StageCounters> counters;
    std::atomic<int> running{0};
  };
  void Fail(Status status);

  std::vector<QueueControl*> queues_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<std::function<void()>> cancel_hooks_;
  std::atomic<bool> cancelled_{false};
  Mutex mu_;
  Status first_error_ SKIFF_GUARDED_BY(mu_);
  double wall_seconds_ = 0;
};

}  // namespace skiff::pipeline
