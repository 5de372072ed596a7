#include "skiff/pipeline/pipeline.h"

#include <chrono>
#include <thread>

#include "skiff/mutex.h"

namespace skiff::pipeline {

bool StageContext::cancelled() const { return pipeline_->cancelled(); }

void Pipeline::AddQueue(QueueControl* queue) {
  SKIFF_CHECK(queue != nullptr);
  queues_.push_back(queue);
}

void Pipeline::AddStage(std::string name, int threads, StageFn fn,
                        std::vector<QueueControl*> closes) {
  SKIFF_CHECK(threads >= 1);
  auto stage = std::make_unique<Stage>();
  stage->counters = std::make_unique<StageCounters>(name, threads);
  stage->name = std::move(name);
  stage->threads = threads;
  stage->fn = std::move(fn);
  stage->closes = std::move(closes);
  stages_.push_back(std::move(stage));
}

void Pipeline::OnCancel(std::function<void()> hook) { cancel_hooks_.push_back(std::move(hook)); }

void Pipeline::Fail(Status status) {
  SKIFF_CHECK(!status.ok());
  {
    MutexLock lock(&mu_);
    if (!first_error_.ok()) return;  // only the first error is kept, and cancels once
    first_error_ = std::move(status);
    cancelled_.store(true, std::memory_order_release);
  }
  for (QueueControl* queue : queues_) queue->Cancel();
  for (auto& hook : cancel_hooks_) hook();
}

void Pipeline::Cancel(Status reason) {
  if (reason.ok()) reason = Status::Aborted("pipeline cancelled");
  Fail(std::move(reason));
}

Status Pipeline::Run() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (auto& stage_ptr : stages_) {
    Stage* stage = stage_ptr.get();
    stage->running.store(stage->threads);
    for (int t = 0; t < stage->threads; ++t) {
      threads.emplace_back([this, stage, t] {
        Status status;
        {
          StageContext context(this, stage->counters.get(), t);
          status = stage->fn(context);
          context.timer()->Finish();
        }
        if (!status.ok()) {
          Fail(status.WithContext(stage->name + " stage"));
          return;
        }
        // The last thread of a stage to finish closes its outputs.
        if (stage->running.fetch_sub(1) == 1) {
          for (QueueControl* queue : stage->closes) queue->Close();
        }
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  wall_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MutexLock lock(&mu_);
  return first_error_;
}

std::vector<StageStats> Pipeline::stats() const {
  std::vector<StageStats> out;
  for (const auto& stage : stages_) out.push_back(stage->counters->Snapshot());
  return out;
}

}  // namespace skiff::pipeline
