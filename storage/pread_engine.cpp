// The pread engine: a fixed pool of worker threads, each doing one blocking pread per piece. Used
// where io_uring is unavailable. Pieces, retries and completions follow the same RequestTracker
// rules as the io_uring engine.
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "skiff/mutex.h"

#include "storage/engines.h"

namespace skiff::storage::internal {
namespace {

class PreadEngine final : public IoEngine {
 public:
  explicit PreadEngine(const IoEngineOptions& options)
      : options_(options), tracker_(options.max_piece_bytes) {
    const uint32_t n = std::max<uint32_t>(1, options.pread_threads);
    for (uint32_t t = 0; t < n; ++t) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~PreadEngine() override {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      tracker_.pending().clear();
    }
    work_cv_.SignalAll();
    for (auto& w : workers_) w.join();
  }

  IoEngineKind kind() const override { return IoEngineKind::kPread; }
  std::string Describe() const override {
    return "pread (" + std::to_string(workers_.size()) + " threads)";
  }

  Result<uint32_t> AddFile(const ReadFile& file) override {
    MutexLock lock(&mu_);
    return tracker_.AddFile(FileEntry{file.fd(), file.path(), file.alignment()});
  }

  Status Submit(std::span<const ReadRequest> requests) override {
    {
      MutexLock lock(&mu_);
      SKIFF_RETURN_IF_ERROR(tracker_.Submit(requests));
    }
    work_cv_.SignalAll();
    done_cv_.SignalAll();  // misaligned requests may have completed at once
    return Status::Ok();
  }

  size_t Reap(size_t min_completions, std::vector<ReadCompletion>* out) override {
    MutexLock lock(&mu_);
    const size_t target = std::min(min_completions, tracker_.outstanding());
    while (tracker_.completed_count() < target) done_cv_.Wait(&mu_);
    return tracker_.TakeCompleted(out);
  }

  size_t outstanding() const override {
    MutexLock lock(&mu_);
    return tracker_.outstanding();
  }

 private:
  void WorkerLoop() {
    MutexLock lock(&mu_);
    for (;;) {
      while (!stopping_ && tracker_.pending().empty()) work_cv_.Wait(&mu_);
      if (stopping_) return;
      Piece p = tracker_.pending().front();
      tracker_.pending().pop_front();
      const FileEntry& f = tracker_.file(p.file);
      const int fd = f.fd;
      const uint32_t alignment = f.alignment;
      ++reads_issued_;
      lock.Unlock();
      const ssize_t r = ::pread(fd, p.dst, p.length, static_cast<off_t>(p.offset));
      int64_t res = r < 0 ? -static_cast<int64_t>(errno) : r;
      if (options_.faults) res = options_.faults->Apply(res, p.dst, p.length, alignment);
      lock.Lock();
      if (res > 0) bytes_read_ += static_cast<uint64_t>(res);
      Status status;
      if (ConsumeResult(tracker_, &p, res, &status)) {
        tracker_.PieceDone(p.parent, status);
        done_cv_.SignalAll();
      } else {
        tracker_.pending().push_front(p);
      }
    }
  }

  const IoEngineOptions options_;
  mutable Mutex mu_;
  CondVar work_cv_;
  CondVar done_cv_;
  RequestTracker tracker_ SKIFF_GUARDED_BY(mu_);
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoEngine> CreatePreadEngine(const IoEngineOptions& options) {
  return std::make_unique<PreadEngine>(options);
}

}  // namespace skiff::storage::internal
