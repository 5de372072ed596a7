#include "skiff/pipeline/resident_graph_source.h"

namespace skiff::pipeline {

ResidentGraphSource::ResidentGraphSource(const BufferedGraph& graph, const ResidentSet& resident,
                                         std::span<const int64_t> seeds, int expanded_hops)
    : graph_(graph),
      resident_(resident),
      expanded_hops_(expanded_hops),
      compact_ids_(graph.num_nodes() <= INT32_MAX) {
  if (graph_.mode() != SamplingMode::kExact || expanded_hops_ <= 0) return;
  // Every partition resident: nothing is ever read fine-grained, so nothing to track.
  if (resident_.num_resident() == graph_.source().num_partitions()) return;
  pending_by_hop_.resize(static_cast<size_t>(expanded_hops_));
  hop_of_.reserve(seeds.size() * 8);
  const storage::DatasetPartitionSource& source = graph_.source();
  for (int64_t s : seeds) {
    if (!resident_.contains(source.partition_of(s)) && hop_of_.emplace(s, 0).second) {
      pending_by_hop_[0].push_back(s);
    }
  }
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
  std::vector<int64_t>& pending = pending_by_hop_[static_cast<size_t>(it->second)];
  if (pending.empty()) return Status::Ok();
  // Rows of earlier hops stay cached: every later hop asks for them again.
  SKIFF_RETURN_IF_ERROR(Fetch(pending));
  pending.clear();
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
  cache_.reserve(cache_.size() + nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    cache_[nodes[i]] = {chunk, static_cast<uint64_t>(indptr[i]),
                        static_cast<uint64_t>(indptr[i + 1] - indptr[i])};
  }
  return Status::Ok();
}

std::optional<ResidentGraphSource::Row> ResidentGraphSource::Cached(int64_t v) const {
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
