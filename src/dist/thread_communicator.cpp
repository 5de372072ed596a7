// Ranks as threads of one process (CreateThreadCommunicators). Every collective is one round of
// a shared mailbox: each rank posts its message for every rank, waits until all have posted,
// takes its own messages, and waits until all have taken theirs before the next round may post.
// Reductions are computed from the messages as the MPI communicator computes them (rank order),
// so the two give bitwise the same results.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "skiff/dist/communicator.h"
#include "src/dist/rank_order_sum.h"

namespace skiff::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The mailbox the ranks of one group share.
class Rounds {
 public:
  Rounds(int size, double timeout_seconds)
      : size_(size),
        timeout_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(timeout_seconds))),
        box_(static_cast<size_t>(size) * static_cast<size_t>(size)) {}

  int size() const { return size_; }

  // One round: rank `rank` sends out[r] to each rank r and receives what each sent it. Aborted,
  // naming the round, when the others do not all post (or take) within the timeout.
  Result<std::vector<std::string>> Exchange(int rank, std::vector<std::string> out,
                                            const std::string& name) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = Clock::now() + timeout_;
    // The previous round must be emptied by every rank before this one posts.
    if (!changed_.wait_until(lock, deadline, [&] { return taken_ == 0; })) {
      return TimedOut(name);
    }
    for (int r = 0; r < size_; ++r) box_[Slot(rank, r)] = std::move(out[static_cast<size_t>(r)]);
    const int64_t round = round_;
    if (++posted_ == size_) {
      posted_ = 0;
      taken_ = size_;
      ++round_;
      changed_.notify_all();
    } else if (!changed_.wait_until(lock, deadline, [&] { return round_ != round; })) {
      return TimedOut(name);
    }
    std::vector<std::string> in(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) in[static_cast<size_t>(r)] = std::move(box_[Slot(r, rank)]);
    if (--taken_ == 0) changed_.notify_all();
    return in;
  }

 private:
  size_t Slot(int from, int to) const {
    return static_cast<size_t>(from) * static_cast<size_t>(size_) + static_cast<size_t>(to);
  }
  Status TimedOut(const std::string& name) {
    return Status::Aborted(name +
                           " did not complete within the timeout: a rank left the collective");
  }

  const int size_;
  const Clock::duration timeout_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> box_;  // box_[from * size + to]
  int posted_ = 0;                // ranks that posted in the current round
  int taken_ = 0;                 // ranks yet to take their messages of the last round
  int64_t round_ = 0;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Rounds> rounds, int rank)
      : rounds_(std::move(rounds)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return rounds_->size(); }

  Status AllReduceSum(std::span<float> values, std::string_view what) override {
    return Reduce(values, what);
  }
  Status AllReduceSum(std::span<double> values, std::string_view what) override {
    return Reduce(values, what);
  }
  Status AllReduceSum(std::span<int64_t> values, std::string_view what) override {
    return Reduce(values, what);
  }
  Status Broadcast(std::string* bytes, int root, std::string_view what) override {
    SKIFF_CHECK(root >= 0 && root < size());
    SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> in, Round("broadcast", what, *bytes));
    *bytes = std::move(in[static_cast<size_t>(root)]);
    return Status::Ok();
  }
  Result<std::vector<std::string>> AllGather(std::string_view bytes,
                                             std::string_view what) override {
    return Round("allgather", what, bytes);
  }
  Status Barrier(std::string_view what) override { return Round("barrier", what, {}).status(); }
  Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each,
                                            std::string_view what) override {
    SKIFF_CHECK(static_cast<int>(to_each.size()) == size());
    return rounds_->Exchange(rank_, std::move(to_each), Name("alltoall", what));
  }
  [[noreturn]] void Abort(const Status& why) override {
    std::fprintf(stderr, "skiff: rank %d of %d: %s\n", rank_, size(), why.ToString().c_str());
    std::exit(1);
  }

 private:
  std::string Name(const char* op, std::string_view what) {
    return std::string(op) + " #" + std::to_string(sequence_++) + " (" + std::string(what) + ")";
  }
  Result<std::vector<std::string>> Round(const char* op, std::string_view what,
                                         std::string_view bytes) {
    std::vector<std::string> out(static_cast<size_t>(size()), std::string(bytes));
    return rounds_->Exchange(rank_, std::move(out), Name(op, what));
  }
  template <typename T>
  Status Reduce(std::span<T> values, std::string_view what) {
    const std::string_view mine(reinterpret_cast<const char*>(values.data()), values.size_bytes());
    SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> in, Round("allreduce", what, mine));
    for (const std::string& part : in) {
      if (part.size() != values.size_bytes()) {
        return Status::InvalidArgument("allreduce (" + std::string(what) +
                                       "): the ranks' vectors differ in length");
      }
    }
    SumInRankOrder(in, values);
    return Status::Ok();
  }

  std::shared_ptr<Rounds> rounds_;
  const int rank_;
  int64_t sequence_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> CreateThreadCommunicators(int size,
                                                                     const CommOptions& options) {
  SKIFF_CHECK(size >= 1 && options.timeout_seconds > 0);
  auto rounds = std::make_shared<Rounds>(size, options.timeout_seconds);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<ThreadCommunicator>(rounds, r));
  return out;
}

}  // namespace skiff::dist
