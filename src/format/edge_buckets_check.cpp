// Dataset::VerifyEdgeBuckets: the edge buckets `skiff partition` writes (docs/partition.md, "Edge
// buckets") against the manifest's partitioning and the graph.
#include <algorithm>
#include <string>
#include <vector>

#include "skiff/format/content_checks.h"
#include "skiff/format/dataset.h"

namespace skiff::format {
namespace {

constexpr int64_t kChunkRecords = int64_t{1} << 20;

// The part of `node` by the partition boundaries (node in [0, N)).
int64_t PartOf(const std::vector<int64_t>& boundaries, int64_t node) {
  return std::upper_bound(boundaries.begin(), boundaries.end(), node) - boundaries.begin() - 1;
}

// Records [first, first + count) of the bucket file, widened: (u, v) interleaved.
Status ReadRecords(const ChecksummedFileReader& r, size_t id_bytes, int64_t first, int64_t count,
                   std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(2 * count));
  const uint64_t offset = static_cast<uint64_t>(first) * 2 * id_bytes;
  if (id_bytes == 8) return r.ReadAt(offset, out->size() * 8, out->data());
  std::vector<int32_t> narrow(out->size());
  SKIFF_RETURN_IF_ERROR(r.ReadAt(offset, narrow.size() * 4, narrow.data()));
  std::copy(narrow.begin(), narrow.end(), out->begin());
  return Status::Ok();
}

// The index: k*k + 1 entries from 0 to num_edges, never decreasing.
Status CheckBucketIndex(const std::string& path, const std::vector<int64_t>& idx,
                        int64_t num_edges) {
  for (size_t b = 0; b < idx.size(); ++b) {
    const bool bad = (b == 0 && idx[b] != 0) || idx[b] < 0 || idx[b] > num_edges ||
                     (b > 0 && idx[b] < idx[b - 1]) || (b + 1 == idx.size() && idx[b] != num_edges);
    if (bad) {
      return Status::Corruption(path + ": entry " + std::to_string(b) + " = " +
                                std::to_string(idx[b]) +
                                "; bucket offsets must start at 0, never decrease and end at "
                                "num_edges = " +
                                std::to_string(num_edges));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Dataset::VerifyEdgeBuckets(uint64_t graph_edge_sum) const {
  if (!manifest_.partitions || manifest_.partitions->edge_buckets_file.empty()) {
    return Status::Ok();
  }
  const PartitionInfo& p = *manifest_.partitions;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* index, File(p.edge_buckets_index_file));
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* buckets, File(p.edge_buckets_file));
  const auto k = static_cast<int64_t>(p.num_partitions);
  const int64_t e = manifest_.num_edges;
  const size_t id_bytes = DTypeBytes(manifest_.neighbor_dtype);
  if (index->info().data_bytes != static_cast<uint64_t>(k * k + 1) * 8) {
    return Status::Corruption(index->path() + ": holds " +
                              std::to_string(index->info().data_bytes) + " bytes, expected " +
                              std::to_string((k * k + 1) * 8) +
                              " (k*k + 1 offsets, k = " + std::to_string(k) + ")");
  }
  if (buckets->info().data_bytes != static_cast<uint64_t>(e) * 2 * id_bytes) {
    return Status::Corruption(buckets->path() + ": holds " +
                              std::to_string(buckets->info().data_bytes) + " bytes, expected " +
                              std::to_string(static_cast<uint64_t>(e) * 2 * id_bytes) +
                              " (one record per edge)");
  }
  std::vector<int64_t> idx(static_cast<size_t>(k * k + 1));
  SKIFF_RETURN_IF_ERROR(index->ReadAt(0, idx.size() * 8, idx.data()));
  SKIFF_RETURN_IF_ERROR(CheckBucketIndex(index->path(), idx, e));

  uint64_t sum = 0;
  std::vector<int64_t> records;
  size_t b = 0;  // the bucket of the current record
  int64_t pu = -1, pv = -1;
  for (int64_t first = 0; first < e; first += kChunkRecords) {
    const int64_t count = std::min(kChunkRecords, e - first);
    SKIFF_RETURN_IF_ERROR(ReadRecords(*buckets, id_bytes, first, count, &records));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t at = first + i;
      while (idx[b + 1] <= at) ++b;
      const int64_t u = records[static_cast<size_t>(2 * i)];
      const int64_t v = records[static_cast<size_t>(2 * i + 1)];
      auto where = [&] {
        return buckets->path() + ": record " + std::to_string(at) + " (" + std::to_string(u) +
               ", " + std::to_string(v) + ") of bucket " + std::to_string(b) + " (parts " +
               std::to_string(static_cast<int64_t>(b) / k) + ", " +
               std::to_string(static_cast<int64_t>(b) % k) + ")";
      };
      if (u < 0 || u >= manifest_.num_nodes || v < 0 || v >= manifest_.num_nodes) {
        return Status::Corruption(where() + " has an endpoint outside [0, num_nodes = " +
                                  std::to_string(manifest_.num_nodes) + ")");
      }
      if (PartOf(p.boundaries, u) != static_cast<int64_t>(b) / k ||
          PartOf(p.boundaries, v) != static_cast<int64_t>(b) % k) {
        return Status::Corruption(where() + " is an edge between parts " +
                                  std::to_string(PartOf(p.boundaries, u)) + " and " +
                                  std::to_string(PartOf(p.boundaries, v)));
      }
      if (at > idx[b] && (u < pu || (u == pu && v < pv))) {
        return Status::Corruption(where() + " comes after (" + std::to_string(pu) + ", " +
                                  std::to_string(pv) +
                                  "); a bucket's edges are ordered by source, then destination");
      }
      pu = u;
      pv = v;
      sum += EdgeHash(u, v);
    }
  }
  if (sum != graph_edge_sum) {
    return Status::Corruption(buckets->path() + ": the buckets do not hold the edges of " +
                              kNeighborsFile);
  }
  return Status::Ok();
}

}  // namespace skiff::format
