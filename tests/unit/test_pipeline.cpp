#include <doctest/doctest.h>

#include <atomic>
#include <numeric>
#include <thread>

#include "skiff/pipeline/bounded_queue.h"
#include "skiff/pipeline/pipeline.h"

using namespace skiff;
using namespace skiff::pipeline;

TEST_CASE("bounded queue: FIFO, close drains, cancel drops and unblocks") {
  BoundedQueue<int> queue("q", 2);
  CHECK(queue.Push(1));
  CHECK(queue.Push(2));
  CHECK(queue.size() == 2);
  CHECK(*queue.Pop() == 1);
  CHECK(queue.Push(3));
  queue.Close();
  CHECK_FALSE(queue.Push(4));
  CHECK(*queue.Pop() == 2);
  CHECK(*queue.Pop() == 3);
  CHECK_FALSE(queue.Pop().has_value());

  BoundedQueue<int> full("full", 1);
  REQUIRE(full.Push(1));
  std::atomic<bool> push_returned{false};
  bool push_result = true;
  std::thread producer([&] {
    push_result = full.Push(2);  // blocks: the queue is full
    push_returned = true;
  });
  BoundedQueue<int> empty("empty", 1);
  std::optional<int> popped = 7;
  std::thread consumer([&] { popped = empty.Pop(); });  // blocks: the queue is empty
  full.Cancel();
  empty.Cancel();
  producer.join();
  consumer.join();
  CHECK(push_returned);
  CHECK_FALSE(push_result);
  CHECK_FALSE(popped.has_value());
  CHECK(full.size() == 0);  // cancel dropped the queued item
}

TEST_CASE("bounded queue: blocked time is recorded as stall of the waiting stage") {
  BoundedQueue<int> queue("q", 1);
  StageCounters counters("consumer", 1);
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(queue.Push(5));
  });
  {
    StageTimer timer(&counters);
    CHECK(*queue.Pop(&timer) == 5);
    timer.Finish();
  }
  producer.join();
  const StageStats stats = counters.Snapshot();
  CHECK(stats.stall_seconds > 0);
  CHECK(stats.busy_seconds >= 0);
  CHECK(queue.pop_wait_seconds() > 0);
}

namespace {
// source -> square (N threads) -> sink, over `n` items; `fail_at` >= 0 makes `failing_stage` fail
// when it sees that item.
struct ThreeStages {
  BoundedQueue<int> a{"a", 2};
  BoundedQueue<int> b{"b", 2};
  std::atomic<int64_t> sum{0};
  Pipeline pipeline;

  ThreeStages(int n, int square_threads, std::string failing_stage, int fail_at) {
    pipeline.AddQueue(&a);
    pipeline.AddQueue(&b);
    pipeline.AddStage("source", 1,
                      [this, n, failing_stage, fail_at](StageContext& ctx) -> Status {
                        for (int i = 0; i < n; ++i) {
                          if (failing_stage == "source" && i == fail_at)
                            return Status::IOError("disk gone");
                          if (!a.Push(i, ctx.timer())) return Status::Aborted("cancelled");
                          ctx.AddItems(1);
                        }
                        return Status::Ok();
                      },
                      {&a});
    pipeline.AddStage("square", square_threads,
                      [this, failing_stage, fail_at](StageContext& ctx) -> Status {
                        while (auto item = a.Pop(ctx.timer())) {
                          if (failing_stage == "square" && *item == fail_at) {
                            return Status::Corruption("bad item " + std::to_string(*item));
                          }
                          if (!b.Push(*item * *item, ctx.timer()))
                            return Status::Aborted("cancelled");
                          ctx.AddItems(1);
                        }
                        return Status::Ok();
                      },
                      {&b});
    pipeline.AddStage("sink", 1, [this, failing_stage, fail_at](StageContext& ctx) -> Status {
      int seen = 0;
      while (auto item = b.Pop(ctx.timer())) {
        if (failing_stage == "sink" && seen == fail_at) return Status::Internal("sink broke");
        sum += *item;
        ++seen;
        ctx.AddItems(1);
      }
      return Status::Ok();
    });
  }
};
}  // namespace

TEST_CASE("pipeline: all items flow through and stats are kept per stage") {
  ThreeStages p(1000, 3, "", -1);
  REQUIRE(p.pipeline.Run().ok());
  int64_t expected = 0;
  for (int64_t i = 0; i < 1000; ++i) expected += i * i;
  CHECK(p.sum == expected);
  const auto stats = p.pipeline.stats();
  REQUIRE(stats.size() == 3);
  CHECK(stats[0].name == "source");
  CHECK(stats[0].items == 1000);
  CHECK(stats[1].items == 1000);
  CHECK(stats[1].threads == 3);
  CHECK(stats[2].items == 1000);
  CHECK(!FormatStageStats(stats, p.pipeline.wall_seconds()).empty());
}

TEST_CASE("pipeline: the first error from any stage is returned and nothing hangs") {
  for (const char* stage : {"source", "square", "sink"}) {
    for (int fail_at : {0, 1, 500}) {
      CAPTURE(stage);
      CAPTURE(fail_at);
      ThreeStages p(1000, 2, stage, fail_at);
      const Status status = p.pipeline.Run();
      REQUIRE_FALSE(status.ok());
      CHECK(p.pipeline.cancelled());
      const std::string text = status.ToString();
      CHECK(text.find(stage) != std::string::npos);  // the failing stage is named
      if (std::string(stage) == "source") CHECK(status.code() == StatusCode::kIOError);
      if (std::string(stage) == "square") CHECK(status.code() == StatusCode::kCorruption);
      if (std::string(stage) == "sink") CHECK(status.code() == StatusCode::kInternal);
    }
  }
}

TEST_CASE("pipeline: an outside Cancel unblocks stages waiting on non-queue work via hooks") {
  Pipeline pipeline;
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;
  pipeline.OnCancel([&] {
    std::lock_guard lock(mu);
    woken = true;
    cv.notify_all();
  });
  pipeline.AddStage("waiter", 2, [&](StageContext& ctx) -> Status {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return woken; });
    return ctx.cancelled() ? Status::Aborted("woken by cancel") : Status::Ok();
  });
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pipeline.Cancel(Status::Aborted("interrupted by the user"));
  });
  const Status status = pipeline.Run();
  canceller.join();
  CHECK(status.code() == StatusCode::kAborted);
  CHECK(status.message().find("interrupted") != std::string::npos);
}
