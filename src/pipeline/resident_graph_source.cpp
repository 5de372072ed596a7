#include "skiff/pipeline/resident_graph_source.h"

#include <algorithm>

namespace skiff::pipeline {

void ListsReadAhead::Put(std::vector<int64_t> nodes, std::vector<int64_t> indptr,
                         std::vector<int32_t> ids32, std::vector<int64_t> ids64) {
  SKIFF_CHECK(indptr.size() == nodes.size() + 1);
  SKIFF_CHECK(std::is_sorted(nodes.begin(), nodes.end()));
  SKIFF_CHECK(ids32.empty() || ids64.empty());
  SKIFF_CHECK(static_cast<size_t>(indptr.back()) == ids32.size() + ids64.size());
  MutexLock lock(&mu_);
  nodes_ = std::move(nodes);
  indptr_ = std::move(indptr);
  ids32_ = std::move(ids32);
  ids64_ = std::move(ids64);
}

bool ListsReadAhead::AppendTo(int64_t v, std::vector<int64_t>* ids) const {
  MutexLock lock(&mu_);
  const auto it = std::lower_bound(nodes_.begin(), nodes_.end(), v);
  if (it == nodes_.end() || *it != v) return false;
  const auto i = static_cast<size_t>(it - nodes_.begin());
  const auto begin = static_cast<ptrdiff_t>(indptr_[i]),
             end = static_cast<ptrdiff_t>(indptr_[i + 1]);
  if (ids64_.empty()) {
    ids->insert(ids->end(), ids32_.begin() + begin, ids32_.begin() + end);
  } else {
    ids->insert(ids->end(), ids64_.begin() + begin, ids64_.begin() + end);
  }
  return true;
}

void ListsReadAhead::Clear() { Put({}, {0}, {}, {}); }

size_t ListsReadAhead::size() const {
  MutexLock lock(&mu_);
  return nodes_.size();
}

ResidentGraphSource::ResidentGraphSource(const BufferedGraph& graph, const ResidentSet& resident,
                                         std::span<const int64_t> seeds, int expanded_hops)
    : ResidentGraphSource(graph, resident, seeds, expanded_hops, nullptr, {}) {}

ResidentGraphSource::ResidentGraphSource(const BufferedGraph& graph, const ResidentSet& resident,
                                         std::span<const int64_t> seeds, int expanded_hops,
                                         ListsReadAhead* ahead, std::span<const int64_t> next_seeds)
    : graph_(graph),
      resident_(resident),
      expanded_hops_(expanded_hops),
      compact_ids_(graph.num_nodes() <= INT32_MAX),
      ahead_(ahead) {
  if (graph_.mode() != SamplingMode::kExact || expanded_hops_ <= 0) return;
  // Every partition resident: nothing is ever read fine-grained, so nothing to track.
  if (resident_.num_resident() == graph_.source().num_partitions()) return;
  pending_by_hop_.resize(static_cast<size_t>(expanded_hops_));
  hop_of_.reserve(seeds.size() * 8);
  const storage::DatasetPartitionSource& source = graph_.source();
  // The lists read ahead for these seeds, one chunk.
  std::vector<int64_t> taken, taken_indptr{0}, taken_ids;
  for (int64_t s : seeds) {
    if (resident_.contains(source.partition_of(s)) || !hop_of_.emplace(s, 0).second) continue;
    if (ahead_ != nullptr && ahead_->AppendTo(s, &taken_ids)) {
      taken.push_back(s);
      taken_indptr.push_back(static_cast<int64_t>(taken_ids.size()));
    } else {
      pending_by_hop_[0].push_back(s);
    }
  }
  if (!taken.empty()) AddChunk(taken, taken_indptr, std::move(taken_ids));
  if (ahead_ == nullptr) return;
  ahead_->Clear();  // what is left was read for a group cut otherwise; this group reads its own
  for (int64_t v : next_seeds) {
    if (!resident_.contains(source.partition_of(v))) next_seeds_.push_back(v);
  }
  std::sort(next_seeds_.begin(), next_seeds_.end());
  next_seeds_.erase(std::unique(next_seeds_.begin(), next_seeds_.end()), next_seeds_.end());
}

void ResidentGraphSource::AddChunk(std::span<const int64_t> nodes, std::span<const int64_t> indptr,
                                   std::vector<int64_t> ids) const {
  const auto chunk = static_cast<uint32_t>(compact_ids_ ? chunks32_.size() : chunks64_.size());
  IndexChunk(chunk, nodes, indptr);
  if (compact_ids_) {
    chunks32_.emplace_back(ids.begin(), ids.end());  // ids < num_nodes <= INT32_MAX
  } else {
    chunks64_.push_back(std::move(ids));
  }
}

void ResidentGraphSource::IndexChunk(uint32_t chunk, std::span<const int64_t> nodes,
                                     std::span<const int64_t> indptr) const {
  cache_.reserve(cache_.size() + nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    cache_[nodes[i]] = {chunk, static_cast<uint64_t>(indptr[i]),
                        static_cast<uint64_t>(indptr[i + 1] - indptr[i])};
  }
}

void ResidentGraphSource::PutAhead() const {
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> ids32;
  std::vector<int64_t> ids64;
  for (int64_t v : next_seeds_) {
    const std::optional<Row> row = Cached(v);
    SKIFF_CHECK(row.has_value());
    for (size_t j = 0; j < row->size; ++j) {
      if (compact_ids_) {
        ids32.push_back(static_cast<int32_t>((*row)[j]));
      } else {
        ids64.push_back((*row)[j]);
      }
    }
    indptr.push_back(indptr.back() + static_cast<int64_t>(row->size));
  }
  ahead_->Put(std::move(next_seeds_), std::move(indptr), std::move(ids32), std::move(ids64));
  next_seeds_.clear();
}

void ResidentGraphSource::Track(std::span<const int64_t> row) const {
  if (pending_by_hop_.empty()) return;
  const int hop = hop_ + 1;
  if (hop >= expanded_hops_) return;  // the outermost hop's nodes are never expanded
  const storage::DatasetPartitionSource& source = graph_.source();
  for (int64_t w : row) {
    // Only non-resident nodes are tracked: resident rows are read from pinned memory.
    if (resident_.contains(source.partition_of(w))) continue;
    if (!hop_of_.emplace(w, hop).second) continue;
    if (cache_.count(w) == 0) pending_by_hop_[static_cast<size_t>(hop)].push_back(w);
  }
}

Status ResidentGraphSource::FetchHopOf(int64_t v) const {
  if (pending_by_hop_.empty()) return Status::Ok();
  auto it = hop_of_.find(v);
  if (it == hop_of_.end() || it->second >= expanded_hops_) return Status::Ok();
  const int hop = it->second;
  std::vector<int64_t>& pending = pending_by_hop_[static_cast<size_t>(hop)];
  if (pending.empty()) return Status::Ok();
  // The last expanded hop reads most of the file: the next group's seeds come along.
  const bool read_ahead = hop + 1 == expanded_hops_ && !next_seeds_.empty();
  if (read_ahead) {
    for (int64_t seed : next_seeds_) {
      if (cache_.count(seed) > 0) continue;
      const auto h = hop_of_.find(seed);
      if (h == hop_of_.end() || h->second != hop) pending.push_back(seed);  // else pending already
    }
  }
  // Rows of earlier hops stay cached: every later hop asks for them again.
  SKIFF_RETURN_IF_ERROR(Fetch(pending));
  pending.clear();
  if (read_ahead) PutAhead();
  return Status::Ok();
}

Status ResidentGraphSource::Fetch(std::span<const int64_t> nodes) const {
  std::vector<int64_t> indptr;
  uint32_t chunk = 0;
  if (compact_ids_) {
    std::vector<int32_t> rows;
    SKIFF_RETURN_IF_ERROR(graph_.Neighbors(resident_, nodes, &indptr, &rows));
    chunk = static_cast<uint32_t>(chunks32_.size());
    chunks32_.push_back(std::move(rows));
  } else {
    std::vector<int64_t> rows;
    SKIFF_RETURN_IF_ERROR(graph_.Neighbors(resident_, nodes, &indptr, &rows));
    chunk = static_cast<uint32_t>(chunks64_.size());
    chunks64_.push_back(std::move(rows));
  }
  IndexChunk(chunk, nodes, indptr);
  return Status::Ok();
}

std::optional<ResidentGraphSource::Row> ResidentGraphSource::Cached(int64_t v) const {
  if (cache_.empty()) return std::nullopt;  // every partition resident: no hash per row asked for
  auto it = cache_.find(v);
  if (it == cache_.end()) return std::nullopt;
  const CachedRow& row = it->second;
  Row out;
  out.size = row.length;
  if (compact_ids_) {
    out.ids32 = chunks32_[row.chunk].data() + row.offset;
  } else {
    out.ids64 = chunks64_[row.chunk].data() + row.offset;
  }
  return out;
}

Result<ResidentGraphSource::Row> ResidentGraphSource::Load(int64_t v) const {
  if (const auto row = Cached(v)) return *row;
  const int64_t node[1] = {v};
  SKIFF_RETURN_IF_ERROR(Fetch(node));
  return *Cached(v);
}

int64_t ResidentGraphSource::Degree(int64_t v) const {
  if (graph_.mode() == SamplingMode::kExact) return graph_.source().degree(v);
  // In-buffer: the filtered degree. Only resident nodes reach the sampler in this mode, so the
  // filter reads pinned memory and cannot fail.
  auto row = Load(v);
  SKIFF_CHECK_MSG(row.ok(), "in-buffer rows come from pinned memory");
  return static_cast<int64_t>(row->size);
}

void ResidentGraphSource::Prefetch(int64_t v, bool row) const {
  if (graph_.mode() != SamplingMode::kExact) return;
  const storage::DatasetPartitionSource& source = graph_.source();
  if (!row) {
    source.PrefetchDegree(v);
    return;
  }
  const uint32_t p = source.partition_of(v);
  if (resident_.contains(p)) source.PrefetchRowFromPin(resident_.pin(p), v);
}

Status ResidentGraphSource::NeighborsAt(int64_t v, std::span<const int64_t> positions,
                                        int64_t* out) const {
  std::optional<Row> row = Cached(v);
  if (!row.has_value()) {
    const storage::DatasetPartitionSource& source = graph_.source();
    const uint32_t p = source.partition_of(v);
    if (graph_.mode() == SamplingMode::kExact && resident_.contains(p)) {
      source.NeighborsAtFromPin(resident_.pin(p), v, positions, out);
      Track(std::span<const int64_t>(out, positions.size()));
      return Status::Ok();
    } else {
      SKIFF_RETURN_IF_ERROR(FetchHopOf(v));
      SKIFF_ASSIGN_OR_RETURN(row, Load(v));
    }
  }
  for (size_t i = 0; i < positions.size(); ++i) {
    SKIFF_CHECK(positions[i] >= 0 && positions[i] < static_cast<int64_t>(row->size));
    out[i] = (*row)[static_cast<size_t>(positions[i])];
  }
  Track(std::span<const int64_t>(out, positions.size()));
  return Status::Ok();
}

Status ResidentGraphSource::Neighbors(int64_t v, std::vector<int64_t>* out) const {
  auto assign = [out](const Row& row) {
    out->resize(row.size);
    for (size_t i = 0; i < row.size; ++i) (*out)[i] = row[i];
  };
  if (const auto row = Cached(v)) {
    assign(*row);
  } else {
    const storage::DatasetPartitionSource& source = graph_.source();
    const uint32_t p = source.partition_of(v);
    if (graph_.mode() == SamplingMode::kExact && resident_.contains(p)) {
      source.NeighborsFromPin(resident_.pin(p), v, out);
    } else {
      SKIFF_RETURN_IF_ERROR(FetchHopOf(v));
      SKIFF_ASSIGN_OR_RETURN(const Row row, Load(v));
      assign(row);
    }
  }
  Track(*out);
  return Status::Ok();
}

Status ResidentGraphSource::PrepareNodes(std::span<const int64_t> nodes) const {
  cache_.clear();
  chunks32_.clear();
  chunks64_.clear();
  std::vector<int64_t> wanted;
  const storage::DatasetPartitionSource& source = graph_.source();
  for (int64_t v : nodes) {
    const bool resident = resident_.contains(source.partition_of(v));
    if (graph_.mode() == SamplingMode::kInBuffer || !resident) wanted.push_back(v);
  }
  if (wanted.empty()) return Status::Ok();
  return Fetch(wanted);
}

}  // namespace skiff::pipeline
