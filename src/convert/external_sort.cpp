#include "skiff/convert/external_sort.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <queue>
#include <span>

#include "skiff/io/write_path.h"
#include "skiff/parallel_sort.h"

namespace skiff::convert {

// Streams one sorted run: a spill file through a fixed buffer, or the last run where it stayed in
// memory.
class EdgeSorter::RunReader {
 public:
  RunReader(std::string path, size_t buffer_edges) : path_(std::move(path)) {
    buffer_.resize(std::max<size_t>(buffer_edges, 256));
  }
  RunReader(const Edge* edges, size_t count) : view_(edges), count_(count) {}
  ~RunReader() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Open() {
    if (view_ != nullptr) return Status::Ok();
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return Status::FromErrno(errno, "open spill file " + path_);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
    return Refill();
  }
  bool empty() const { return pos_ == count_; }
  const Edge& front() const { return view_[pos_]; }
  // Advances; refills from the file when the buffer is used up.
  Status Pop() {
    ++pos_;
    if (pos_ == count_ && fd_ >= 0) return Refill();
    return Status::Ok();
  }

 private:
  Status Refill() {
    view_ = buffer_.data();
    pos_ = 0;
    count_ = 0;
    char* dst = reinterpret_cast<char*>(buffer_.data());
    const size_t want = buffer_.size() * sizeof(Edge);
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::read(fd_, dst + got, want - got);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "read spill file " + path_);
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    if (got % sizeof(Edge) != 0) {
      return Status::Corruption("spill file " + path_ + " ends mid-record (" + std::to_string(got) +
                                " bytes in the last read)");
    }
    count_ = got / sizeof(Edge);
    return Status::Ok();
  }

  const std::string path_;
  int fd_ = -1;
  std::vector<Edge> buffer_;
  const Edge* view_ = nullptr;  // buffer_, or the run in memory
  size_t pos_ = 0;
  size_t count_ = 0;
};

// K-way merge of run files (a min-heap of run heads).
class EdgeSorter::Merger {
 public:
  // Merges `files`, whose read buffers share `memory_bytes`, and `in_memory` (a sorted run that
  // stayed in memory; may be empty).
  Status Init(const std::vector<std::string>& files, uint64_t memory_bytes,
              std::span<const Edge> in_memory = {}) {
    const size_t per_run_edges =
        static_cast<size_t>(memory_bytes / sizeof(Edge) / std::max<size_t>(files.size(), 1));
    for (const auto& f : files) {
      readers_.push_back(std::make_unique<RunReader>(f, std::min<size_t>(per_run_edges, 1u << 20)));
    }
    if (!in_memory.empty()) {
      readers_.push_back(std::make_unique<RunReader>(in_memory.data(), in_memory.size()));
    }
    for (size_t r = 0; r < readers_.size(); ++r) {
      SKIFF_RETURN_IF_ERROR(readers_[r]->Open());
      if (!readers_[r]->empty()) heap_.push(HeapEntry{readers_[r]->front(), r});
    }
    return Status::Ok();
  }
  bool empty() const { return heap_.empty(); }
  // Pops the smallest edge.
  Status Pop(Edge* out) {
    const HeapEntry top = heap_.top();
    heap_.pop();
    *out = top.edge;
    RunReader& r = *readers_[top.run];
    SKIFF_RETURN_IF_ERROR(r.Pop());
    if (!r.empty()) heap_.push(HeapEntry{r.front(), top.run});
    return Status::Ok();
  }

 private:
  struct HeapEntry {
    Edge edge;
    size_t run;
    bool operator>(const HeapEntry& o) const { return o.edge < edge; }
  };
  std::vector<std::unique_ptr<RunReader>> readers_;
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, std::greater<HeapEntry>> heap_;
};

EdgeSorter::EdgeSorter(const EdgeSorterOptions& options)
    : options_(options), spill_dir_(options.spill_parent_dir, "sort") {
  run_capacity_ = std::max<size_t>(kMinRunEdges, options.memory_bytes / sizeof(Edge));
  sort_threads_ = options.threads > 0 ? options.threads : DefaultSortThreads();
}

EdgeSorter::~EdgeSorter() { merger_.reset(); }  // closes the run files; then spill_dir_ goes

Result<std::unique_ptr<EdgeSorter>> EdgeSorter::Create(const EdgeSorterOptions& options) {
  std::unique_ptr<EdgeSorter> sorter(new EdgeSorter(options));
  // Reserving does not touch the pages: resident memory grows only as the run fills.
  sorter->run_.reserve(sorter->run_capacity_);
  return sorter;
}

void EdgeSorter::SortRun() {
  ParallelSort(run_.data(), run_.data() + run_.size(), sort_threads_);
  if (options_.drop_duplicates) {
    const auto end = std::unique(run_.begin(), run_.end());
    stats_.duplicates_dropped += static_cast<uint64_t>(run_.end() - end);
    run_.erase(end, run_.end());
  }
}

Result<std::string> EdgeSorter::WriteRunFile(const Edge* edges, size_t count) {
  SKIFF_ASSIGN_OR_RETURN(const std::string path,
                         spill_dir_.Path("run-" + std::to_string(next_file_id_++)));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "create spill file " + path);
  Status st = io::WriteAll(fd, edges, count * sizeof(Edge), "spill file " + path);
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno(errno, "close spill file " + path);
  if (!st.ok()) return st;
  stats_.bytes_spilled += count * sizeof(Edge);
  return path;
}

Status EdgeSorter::SpillRun() {
  SKIFF_CHECK(!finished_);
  SortRun();
  return SpillSortedRun();
}

Status EdgeSorter::SpillSortedRun() {
  SKIFF_ASSIGN_OR_RETURN(std::string path, WriteRunFile(run_.data(), run_.size()));
  run_files_.push_back(std::move(path));
  ++stats_.runs_spilled;
  run_.clear();
  return Status::Ok();
}

Status EdgeSorter::MergeToFile(const std::vector<std::string>& inputs, std::string* output) {
  Merger merger;
  SKIFF_RETURN_IF_ERROR(merger.Init(inputs, options_.memory_bytes / 2));
  std::vector<Edge> out;
  out.reserve(std::max<size_t>(1024, options_.memory_bytes / 2 / sizeof(Edge)));
  std::string path;
  int fd = -1;
  {
    SKIFF_ASSIGN_OR_RETURN(path, WriteRunFile(nullptr, 0));
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open spill file " + path);
  }
  Status st;
  bool have_prev = false;
  Edge prev;
  while (st.ok() && !merger.empty()) {
    Edge e;
    st = merger.Pop(&e);
    if (!st.ok()) break;
    if (options_.drop_duplicates && have_prev && e == prev) {
      ++stats_.duplicates_dropped;
      continue;
    }
    have_prev = true;
    prev = e;
    out.push_back(e);
    if (out.size() == out.capacity()) {
      st = io::WriteAll(fd, out.data(), out.size() * sizeof(Edge), "spill file " + path);
      stats_.bytes_spilled += out.size() * sizeof(Edge);
      out.clear();
    }
  }
  if (st.ok() && !out.empty()) {
    st = io::WriteAll(fd, out.data(), out.size() * sizeof(Edge), "spill file " + path);
    stats_.bytes_spilled += out.size() * sizeof(Edge);
  }
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno(errno, "close spill file " + path);
  SKIFF_RETURN_IF_ERROR(st);
  for (const auto& f : inputs) ::unlink(f.c_str());
  *output = path;
  return Status::Ok();
}

Status EdgeSorter::Finish() {
  SKIFF_CHECK(!finished_);
  if (run_files_.empty()) {
    SortRun();  // everything fit: no disk
    finished_ = true;
    return Status::Ok();
  }
  SortRun();
  // The last run stays in memory when the spilled runs' merge buffers fit beside it; otherwise it
  // is spilled too and the merge buffers take the whole budget.
  const uint64_t run_bytes = run_.size() * sizeof(Edge);
  const uint64_t rest = options_.memory_bytes > run_bytes ? options_.memory_bytes - run_bytes : 0;
  if (run_files_.size() <= kMaxFanIn &&
      rest / sizeof(Edge) / run_files_.size() >= kMinMergeBufferEdges) {
    merger_ = std::make_unique<Merger>();
    SKIFF_RETURN_IF_ERROR(merger_->Init(run_files_, rest, run_));
    finished_ = true;
    return Status::Ok();
  }
  if (!run_.empty()) SKIFF_RETURN_IF_ERROR(SpillSortedRun());
  run_.clear();
  run_.shrink_to_fit();  // the merge buffers take the budget
  while (run_files_.size() > kMaxFanIn) {
    std::vector<std::string> next;
    for (size_t i = 0; i < run_files_.size(); i += kMaxFanIn) {
      std::vector<std::string> group(
          run_files_.begin() + static_cast<ptrdiff_t>(i),
          run_files_.begin() + static_cast<ptrdiff_t>(std::min(run_files_.size(), i + kMaxFanIn)));
      if (group.size() == 1) {
        next.push_back(group[0]);
        continue;
      }
      std::string merged;
      SKIFF_RETURN_IF_ERROR(MergeToFile(group, &merged));
      next.push_back(std::move(merged));
    }
    run_files_ = std::move(next);
    ++stats_.merge_passes;
  }
  merger_ = std::make_unique<Merger>();
  SKIFF_RETURN_IF_ERROR(merger_->Init(run_files_, options_.memory_bytes));
  finished_ = true;
  return Status::Ok();
}

Result<size_t> EdgeSorter::Read(Edge* out, size_t capacity) {
  SKIFF_CHECK(finished_);
  size_t n = 0;
  if (!merger_) {
    // In memory: already sorted and de-duplicated.
    n = std::min(capacity, run_.size() - read_pos_);
    std::copy(run_.begin() + static_cast<ptrdiff_t>(read_pos_),
              run_.begin() + static_cast<ptrdiff_t>(read_pos_ + n), out);
    read_pos_ += n;
    return n;
  }
  while (n < capacity && !merger_->empty()) {
    Edge e;
    SKIFF_RETURN_IF_ERROR(merger_->Pop(&e));
    if (options_.drop_duplicates && have_last_ && e == last_) {
      ++stats_.duplicates_dropped;
      continue;
    }
    have_last_ = true;
    last_ = e;
    out[n++] = e;
  }
  return n;
}

}  // namespace skiff::convert
