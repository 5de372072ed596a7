// The io_uring engine. One ring per engine (per I/O thread). The loop follows liburing's
// examples/io_uring-cp.c: a context (Piece) per in-flight read, indexed by the SQE's user_data.
//
// - The ring's CQ has twice as many entries as the number of reads ever in flight, so it cannot
//   overflow; if the kernel still reports a busy CQ (-EBUSY from submit) we reap before submitting.
// - Short reads advance the piece and resubmit the remainder; -EAGAIN and -EINTR resubmit as is.
// - Registered files use a sparse fixed-file table; registered buffers use READ_FIXED when the
// whole
//   destination lies in one registered region. Both degrade to plain reads when refused.
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "skiff/log.h"
#include "storage/engines.h"

namespace skiff::storage::internal {
namespace {

constexpr unsigned kMaxFixedFiles = 64;

class IoUringEngine final : public IoEngine {
 public:
  explicit IoUringEngine(const IoEngineOptions& options)
      : options_(options), tracker_(options.max_piece_bytes) {}

  ~IoUringEngine() override {
    // Never free memory the kernel may still write into: drain what is in flight first.
    while (in_flight_ > 0 || !tracker_.pending().empty()) {
      tracker_.pending().clear();
      if (in_flight_ == 0) break;
      WaitAndProcess();
    }
    if (initialised_) io_uring_queue_exit(&ring_);
  }

  Status Init() {
    if (options_.queue_depth == 0 || options_.queue_depth > 4096) {
      return Status::InvalidArgument("io_uring queue depth must be in 1..4096, got " +
                                     std::to_string(options_.queue_depth));
    }
    io_uring_params params{};
    params.flags = IORING_SETUP_CQSIZE;
    params.cq_entries = 2 * options_.queue_depth;
    int ret = -options_.inject_setup_errno;
    if (ret == 0) ret = io_uring_queue_init_params(options_.queue_depth, &ring_, &params);
    if (ret < 0) return Status::FromErrno(-ret, "io_uring_queue_init");
    initialised_ = true;
    slots_.resize(options_.queue_depth);
    free_slots_.reserve(options_.queue_depth);
    for (uint32_t s = options_.queue_depth; s-- > 0;) free_slots_.push_back(s);
    if (options_.register_files) {
      fixed_files_ = io_uring_register_files_sparse(&ring_, kMaxFixedFiles) == 0;
    }
    return Status::Ok();
  }

  IoEngineKind kind() const override { return IoEngineKind::kIoUring; }

  std::string Describe() const override {
    std::string s = "io_uring (QD " + std::to_string(options_.queue_depth);
    if (fixed_files_) s += ", fixed files";
    if (!regions_.empty()) s += ", fixed buffers";
    return s + ")";
  }

  Result<uint32_t> AddFile(const ReadFile& file) override {
    const uint32_t id = tracker_.AddFile(FileEntry{file.fd(), file.path(), file.alignment()});
    bool fixed = false;
    if (fixed_files_ && id < kMaxFixedFiles) {
      int fd = file.fd();
      fixed = io_uring_register_files_update(&ring_, id, &fd, 1) == 1;
    }
    file_fixed_.push_back(fixed);
    return id;
  }

  Status RegisterBuffers(std::span<const std::span<std::byte>> regions) override {
    if (!options_.use_fixed_buffers || regions.empty()) return Status::Ok();
    SKIFF_CHECK_MSG(regions_.empty(), "RegisterBuffers may be called once");
    std::vector<iovec> iovs;
    for (const auto& r : regions) iovs.push_back(iovec{r.data(), r.size()});
    const int ret =
        io_uring_register_buffers(&ring_, iovs.data(), static_cast<unsigned>(iovs.size()));
    if (ret < 0) {
      LogWarning(std::string("io_uring: registering ") + std::to_string(iovs.size()) +
                 " buffers failed (" + std::strerror(-ret) +
                 "; RLIMIT_MEMLOCK too low?); reading without fixed buffers");
      return Status::Ok();
    }
    for (size_t i = 0; i < regions.size(); ++i) {
      regions_.push_back(Region{reinterpret_cast<uintptr_t>(regions[i].data()), regions[i].size(),
                                static_cast<uint32_t>(i)});
    }
    std::sort(regions_.begin(), regions_.end(),
              [](const Region& a, const Region& b) { return a.base < b.base; });
    return Status::Ok();
  }

  Status Submit(std::span<const ReadRequest> requests) override {
    SKIFF_RETURN_IF_ERROR(tracker_.Submit(requests));
    if (Prepare() > 0) SubmitToKernel(0);
    return Status::Ok();
  }

  size_t Reap(size_t min_completions, std::vector<ReadCompletion>* out) override {
    const size_t target = std::min(min_completions, tracker_.outstanding());
    ProcessReady();
    while (tracker_.completed_count() < target) {
      if (Prepare() > 0 || in_flight_ > 0) {
        WaitAndProcess();
      } else {
        break;  // nothing in flight and nothing pending: every request has completed
      }
    }
    return tracker_.TakeCompleted(out);
  }

  size_t outstanding() const override { return tracker_.outstanding(); }

 private:
  struct Region {
    uintptr_t base;
    uint64_t bytes;
    uint32_t index;
  };

  // Fills free slots from the pending list with prepared SQEs; returns how many were prepared.
  uint32_t Prepare() {
    uint32_t prepared = 0;
    auto& pending = tracker_.pending();
    while (!pending.empty() && !free_slots_.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) break;  // SQ full: submit what we have first
      const uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[slot] = pending.front();
      pending.pop_front();
      const Piece& p = slots_[slot];
      const bool fixed_file = file_fixed_[p.file];
      const int fd = fixed_file ? static_cast<int>(p.file) : tracker_.file(p.file).fd;
      const int buf_index = FindRegion(p.dst, p.length);
      if (buf_index >= 0) {
        io_uring_prep_read_fixed(sqe, fd, p.dst, static_cast<unsigned>(p.length), p.offset,
                                 buf_index);
      } else {
        io_uring_prep_read(sqe, fd, p.dst, static_cast<unsigned>(p.length), p.offset);
      }
      if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
      io_uring_sqe_set_data64(sqe, slot);
      ++in_flight_;
      ++unsubmitted_;
      ++reads_issued_;
      ++prepared;
    }
    return prepared;
  }

  int FindRegion(const std::byte* dst, uint64_t len) const {
    if (regions_.empty()) return -1;
    const auto addr = reinterpret_cast<uintptr_t>(dst);
    auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                               [](uintptr_t a, const Region& r) { return a < r.base; });
    if (it == regions_.begin()) return -1;
    --it;
    if (addr + len <= it->base + it->bytes) return static_cast<int>(it->index);
    return -1;
  }

  // Submits prepared SQEs and optionally waits for `wait_nr` completions, retrying on EINTR and
  // reaping first when the kernel says the completion queue is busy.
  void SubmitToKernel(unsigned wait_nr) {
    for (;;) {
      const int ret =
          wait_nr > 0 ? io_uring_submit_and_wait(&ring_, wait_nr) : io_uring_submit(&ring_);
      if (ret >= 0) {
        unsubmitted_ = 0;
        return;
      }
      if (ret == -EINTR) continue;
      if (ret == -EBUSY || ret == -EAGAIN) {
        if (ProcessReady() == 0 && wait_nr == 0) return;  // retried on the next call
        continue;
      }
      CheckFailed("io_uring_submit", __FILE__, __LINE__, std::strerror(-ret));
    }
  }

  void WaitAndProcess() {
    if (ProcessReady() > 0) {
      if (Prepare() > 0) SubmitToKernel(0);
      return;
    }
    Prepare();
    if (unsubmitted_ > 0) {
      SubmitToKernel(1);
    } else {
      io_uring_cqe* cqe = nullptr;
      int ret;
      do {
        ret = io_uring_wait_cqe(&ring_, &cqe);
      } while (ret == -EINTR || ret == -EAGAIN);
      if (ret < 0) CheckFailed("io_uring_wait_cqe", __FILE__, __LINE__, std::strerror(-ret));
    }
    ProcessReady();
    if (Prepare() > 0) SubmitToKernel(0);
  }

  // Handles every CQE that is ready now; returns how many.
  unsigned ProcessReady() {
    io_uring_cqe* cqes[256];
    unsigned total = 0;
    for (;;) {
      const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 256);
      for (unsigned i = 0; i < n; ++i) Complete(io_uring_cqe_get_data64(cqes[i]), cqes[i]->res);
      io_uring_cq_advance(&ring_, n);
      total += n;
      if (n < 256) return total;
    }
  }

  void Complete(uint64_t slot, int64_t res) {
    SKIFF_CHECK(slot < slots_.size());
    Piece& p = slots_[slot];
    if (options_.faults)
      res = options_.faults->Apply(res, p.dst, p.length, tracker_.file(p.file).alignment);
    if (res > 0) bytes_read_ += static_cast<uint64_t>(res);
    Status status;
    if (ConsumeResult(tracker_, &p, res, &status)) {
      tracker_.PieceDone(p.parent, status);
    } else {
      tracker_.pending().push_front(p);
    }
    free_slots_.push_back(static_cast<uint32_t>(slot));
    --in_flight_;
  }

  const IoEngineOptions options_;
  io_uring ring_{};
  bool initialised_ = false;
  bool fixed_files_ = false;
  RequestTracker tracker_;
  std::vector<Piece> slots_;  // in-flight pieces, by user_data
  std::vector<uint32_t> free_slots_;
  std::vector<bool> file_fixed_;  // by file id
  std::vector<Region> regions_;   // registered buffers, by address
  uint32_t in_flight_ = 0;
  uint32_t unsubmitted_ = 0;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> CreateIoUringEngine(const IoEngineOptions& options) {
  auto engine = std::make_unique<IoUringEngine>(options);
  SKIFF_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<IoEngine>(std::move(engine));
}

}  // namespace skiff::storage::internal
