// The Open MPI communicator (include/skiff/dist/communicator.h). Every collective is a set of
// nonblocking point-to-point messages on a duplicate of MPI_COMM_WORLD, tagged with the
// collective's sequence number, polled with MPI_Test against a deadline: MPI itself would wait
// forever for a rank that died or stopped. Receives learn their size from a matched probe
// (MPI_Improbe, then MPI_Imrecv), so byte collectives need no separate size exchange.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "skiff/dist/communicator.h"
#include "src/dist/rank_order_sum.h"

namespace skiff::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Tags wrap well below the smallest MPI_TAG_UB the standard allows (32767).
constexpr int64_t kTagSpace = 30000;

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// One receive from one peer: probed (its size known, the receive posted), then done.
struct Incoming {
  int peer = 0;
  bool probed = false;
  bool done = false;
  MPI_Request request = MPI_REQUEST_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, double timeout_seconds)
      : comm_(comm), rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}
  ~MpiCommunicator() override {
    // After a failed collective, messages may still be pending: finalising could wait for them.
    if (!broken_.ok()) return;
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status AllReduceSum(std::span<float> values, std::string_view what) override {
    return ReduceInRankOrder(values, what);
  }
  Status AllReduceSum(std::span<double> values, std::string_view what) override {
    return ReduceInRankOrder(values, what);
  }
  Status AllReduceSum(std::span<int64_t> values, std::string_view what) override {
    return ReduceInRankOrder(values, what);
  }

  Status Broadcast(std::string* bytes, int root, std::string_view what) override {
    SKIFF_CHECK(root >= 0 && root < size_);
    std::vector<int> to, from;
    if (rank_ == root) {
      to = Peers();
    } else {
      from = {root};
    }
    std::vector<std::string> received(static_cast<size_t>(size_));
    SKIFF_RETURN_IF_ERROR(Exchange("broadcast", what, Same(*bytes, to), to, from, &received));
    if (rank_ != root) *bytes = std::move(received[static_cast<size_t>(root)]);
    return Status::Ok();
  }

  Result<std::vector<std::string>> AllGather(std::string_view bytes,
                                             std::string_view what) override {
    std::vector<std::string> received(static_cast<size_t>(size_));
    SKIFF_RETURN_IF_ERROR(
        Exchange("allgather", what, Same(bytes, Peers()), Peers(), Peers(), &received));
    received[static_cast<size_t>(rank_)] = std::string(bytes);
    return received;
  }

  Status Barrier(std::string_view what) override {
    std::vector<std::string> received(static_cast<size_t>(size_));
    return Exchange("barrier", what, Same({}, Peers()), Peers(), Peers(), &received);
  }

  Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each,
                                            std::string_view what) override {
    SKIFF_CHECK(static_cast<int>(to_each.size()) == size_);
    const std::vector<int> peers = Peers();
    std::vector<std::string_view> bytes;
    for (int peer : peers) bytes.emplace_back(to_each[static_cast<size_t>(peer)]);
    std::vector<std::string> received(static_cast<size_t>(size_));
    SKIFF_RETURN_IF_ERROR(Exchange("alltoall", what, bytes, peers, peers, &received));
    received[static_cast<size_t>(rank_)] = std::move(to_each[static_cast<size_t>(rank_)]);
    return received;
  }

  [[noreturn]] void Abort(const Status& why) override {
    std::fprintf(stderr, "skiff: rank %d of %d: %s\n", rank_, size_, why.ToString().c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; should it, the process still ends
  }

 private:
  std::vector<int> Peers() const {
    std::vector<int> peers;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) peers.push_back(r);
    }
    return peers;
  }

  // `bytes` for each of `to`.
  static std::vector<std::string_view> Same(std::string_view bytes, const std::vector<int>& to) {
    return std::vector<std::string_view>(to.size(), bytes);
  }

  // Every rank's values, then out = v0 + v1 + ... in rank order (bitwise the same everywhere).
  template <typename T>
  Status ReduceInRankOrder(std::span<T> values, std::string_view what) {
    if (size_ == 1) return Status::Ok();
    const std::string_view mine(reinterpret_cast<const char*>(values.data()), values.size_bytes());
    std::vector<std::string> received(static_cast<size_t>(size_));
    SKIFF_RETURN_IF_ERROR(
        Exchange("allreduce", what, Same(mine, Peers()), Peers(), Peers(), &received));
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && received[static_cast<size_t>(r)].size() != values.size_bytes()) {
        return Fail(Status::InvalidArgument(
            "allreduce (" + std::string(what) + "): rank " + std::to_string(r) + " sent " +
            std::to_string(received[static_cast<size_t>(r)].size() / sizeof(T)) + " values, rank " +
            std::to_string(rank_) + " has " + std::to_string(values.size()) +
            " (the ranks' models or options differ)"));
      }
    }
    received[static_cast<size_t>(rank_)] = std::string(mine);
    SumInRankOrder(received, values);
    return Status::Ok();
  }

  // Records the first failure: the communicator is unusable after it.
  Status Fail(Status status) {
    if (broken_.ok()) broken_ = status;
    return status;
  }

  // Sends bytes[i] to rank to[i] and receives one message from each rank of `from` into
  // (*received)[rank], within the deadline. `op` and `what` name the collective in errors.
  Status Exchange(const char* op, std::string_view what, const std::vector<std::string_view>& bytes,
                  const std::vector<int>& to, const std::vector<int>& from,
                  std::vector<std::string>* received) {
    if (!broken_.ok()) return broken_;
    const int64_t sequence = sequence_++;
    const int tag = static_cast<int>(sequence % kTagSpace);
    const std::string name =
        std::string(op) + " #" + std::to_string(sequence) + " (" + std::string(what) + ")";
    std::vector<MPI_Request> sends(to.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < to.size(); ++i) {
      // MPI takes a non-const buffer for historical reasons; it only reads it.
      if (bytes[i].size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
        return Fail(Status::InvalidArgument(
            name + ": a message of " + std::to_string(bytes[i].size()) + " bytes to rank " +
            std::to_string(to[i]) + " is over MPI's 2 GiB limit for one message"));
      }
      const int rc =
          MPI_Isend(const_cast<char*>(bytes[i].data()), static_cast<int>(bytes[i].size()), MPI_BYTE,
                    to[i], tag, comm_, &sends[i]);
      if (rc != MPI_SUCCESS) {
        return Fail(Status::Internal(name + ": sending to rank " + std::to_string(to[i]) + ": " +
                                     MpiError(rc)));
      }
    }
    std::vector<Incoming> incoming;
    for (int peer : from) incoming.push_back({.peer = peer});
    return Fail(Poll(name, tag, to, &sends, &incoming, received));
  }

  // Drives the sends and receives of one exchange until all are done or the deadline passes.
  Status Poll(const std::string& name, int tag, const std::vector<int>& to,
              std::vector<MPI_Request>* sends, std::vector<Incoming>* incoming,
              std::vector<std::string>* received) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_seconds_));
    auto pause = std::chrono::microseconds(20);
    while (true) {
      bool all_done = true;
      for (Incoming& in : *incoming) {
        SKIFF_RETURN_IF_ERROR(Advance(name, tag, &in, received));
        all_done = all_done && in.done;
      }
      std::vector<int> unsent;
      for (size_t i = 0; i < sends->size(); ++i) {
        int flag = 0;
        const int rc = MPI_Test(&(*sends)[i], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          return Status::Internal(name + ": sending to rank " + std::to_string(to[i]) + ": " +
                                  MpiError(rc));
        }
        if (!flag) unsent.push_back(to[i]);
      }
      if (all_done && unsent.empty()) return Status::Ok();
      if (Clock::now() > deadline) return TimedOut(name, *incoming, unsent);
      // Open MPI moves a large message in fragments, and only inside MPI calls: while one is
      // arriving, or this rank's messages wait to go with every receive done, poll again at once
      // (yielding the core); sleep, backing off to 1 ms, only while waiting for a peer to send.
      const bool moving = !unsent.empty() && all_done;
      bool arriving = false;
      for (const Incoming& in : *incoming) arriving = arriving || (in.probed && !in.done);
      if (arriving || moving) {
        std::this_thread::yield();
        pause = std::chrono::microseconds(20);
        continue;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  // One step of a receive: probe for the message (then post its receive), or test the receive.
  Status Advance(const std::string& name, int tag, Incoming* in,
                 std::vector<std::string>* received) {
    if (in->done) return Status::Ok();
    int flag = 0;
    int rc = MPI_SUCCESS;
    if (!in->probed) {
      MPI_Message message;
      MPI_Status status;
      rc = MPI_Improbe(in->peer, tag, comm_, &flag, &message, &status);
      if (rc == MPI_SUCCESS && flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        std::string& into = (*received)[static_cast<size_t>(in->peer)];
        into.resize(static_cast<size_t>(count));
        rc = MPI_Imrecv(into.data(), count, MPI_BYTE, &message, &in->request);
        in->probed = rc == MPI_SUCCESS;
      }
    } else {
      rc = MPI_Test(&in->request, &flag, MPI_STATUS_IGNORE);
      in->done = rc == MPI_SUCCESS && flag;
    }
    if (rc == MPI_SUCCESS) return Status::Ok();
    return Status::Internal(name + ": receiving from rank " + std::to_string(in->peer) + ": " +
                            MpiError(rc));
  }

  Status TimedOut(const std::string& name, const std::vector<Incoming>& incoming,
                  const std::vector<int>& unsent) const {
    std::vector<int> silent;
    for (const Incoming& in : incoming) {
      if (!in.done) silent.push_back(in.peer);
    }
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g s", timeout_seconds_);
    std::string message = name + " did not complete within " + seconds + " (--dist-timeout)";
    if (!silent.empty()) message += ": no message from rank " + RankList(silent);
    if (!unsent.empty()) {
      message += std::string(silent.empty() ? ": " : "; ") + "rank " + RankList(unsent) +
                 " did not receive this rank's message";
    }
    return Status::Aborted(message + " (a rank died, was stopped, or left the collective)");
  }

  MPI_Comm comm_;
  const int rank_, size_;
  const double timeout_seconds_;
  int64_t sequence_ = 0;  // collectives so far: the next one's number (and tag)
  Status broken_;         // the first failure; every later collective returns it
};

}  // namespace

bool HaveMpi() { return true; }

Result<std::unique_ptr<Communicator>> CreateMpiCommunicator(const CommOptions& options) {
  if (!(options.timeout_seconds > 0)) {
    return Status::InvalidArgument("--dist-timeout must be a positive number of seconds");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  SKIFF_CHECK_MSG(!initialized, "MPI may be initialised once: one MPI communicator per process");
  int rc = MPI_Init(nullptr, nullptr);
  if (rc != MPI_SUCCESS) return Status::Internal("MPI_Init failed: " + MpiError(rc));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm comm;
  rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (rc != MPI_SUCCESS) return Status::Internal("MPI_Comm_dup failed: " + MpiError(rc));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::unique_ptr<Communicator>(
      std::make_unique<MpiCommunicator>(comm, rank, size, options.timeout_seconds));
}

}  // namespace skiff::dist
