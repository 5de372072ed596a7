#include "skiff/format/shard.h"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace skiff::format {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kCopyChunk = 8 << 20;

// The partitions whose first nodes are `rank_first` (each must be a boundary): *first_parts[r].
Status RankPartitions(const Dataset& whole, std::span<const int64_t> rank_first, int rank,
                      std::vector<uint32_t>* parts) {
  const Manifest& m = whole.manifest();
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("cannot shard " + whole.dir() + ": " + why);
  };
  if (whole.is_shard()) return bad("it is itself a shard");
  if (!m.partitions || m.partitions->num_partitions < 1) {
    return bad("it is not partitioned (run skiff partition first)");
  }
  const std::vector<int64_t>& b = m.partitions->boundaries;
  if (rank_first.size() < 2 || rank_first.front() != 0 || rank_first.back() != m.num_nodes) {
    return bad("the ranks' ranges do not run from node 0 to node " + std::to_string(m.num_nodes));
  }
  const auto ranks = static_cast<int>(rank_first.size()) - 1;
  if (rank < 0 || rank >= ranks) {
    return bad("rank " + std::to_string(rank) + " is not one of " + std::to_string(ranks));
  }
  parts->clear();
  for (const int64_t first : rank_first) {
    const auto at = std::lower_bound(b.begin(), b.end(), first);
    if (at == b.end() || *at != first) {
      return bad("node " + std::to_string(first) + " starts no partition");
    }
    const auto p = static_cast<uint32_t>(at - b.begin());
    if (!parts->empty() && p <= parts->back()) return bad("a rank holds no partition");
    parts->push_back(p);
  }
  return Status::Ok();
}

// Copies bytes [first, end) of the whole dataset's file `name` into a new file of the shard, whose
// window_offset is `first` (0 for a whole copy).
Status CopyWindow(const Dataset& whole, DatasetWriter& out, const std::string& name, uint64_t first,
                  uint64_t end) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, whole.File(name));
  SKIFF_CHECK(first % std::max<uint64_t>(kFileAlignment, in->info().block_bytes) == 0);
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<ChecksummedFileWriter> file,
      ChecksummedFileWriter::Create(out.temp_dir(), name, in->info().block_bytes));
  std::vector<char> buf;
  for (uint64_t at = first; at < end; at += kCopyChunk) {
    buf.resize(std::min(kCopyChunk, end - at));
    SKIFF_RETURN_IF_ERROR(in->ReadAt(at, buf.size(), buf.data()));
    SKIFF_RETURN_IF_ERROR(file->Append(buf.data(), buf.size()));
  }
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*file));
  out.manifest().files[name].window_offset = first;
  return Status::Ok();
}

uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }

// Entry `node` of graph.offsets.
Result<uint64_t> OffsetEntry(const ChecksummedFileReader& offsets, int64_t node) {
  int64_t v = 0;
  SKIFF_RETURN_IF_ERROR(offsets.ReadAt(static_cast<uint64_t>(node) * 8, 8, &v));
  if (v < 0) {
    return Status::Corruption(offsets.path() + ": entry " + std::to_string(node) + " = " +
                              std::to_string(v) + " is negative");
  }
  return static_cast<uint64_t>(v);
}

// The three windows of nodes [begin, end) (partitions [p0, p1)).
Status CopyRangeFiles(const Dataset& whole, DatasetWriter& out, int64_t begin, int64_t end,
                      uint32_t p0, uint32_t p1) {
  const Manifest& m = whole.manifest();
  auto align = [&](const char* name) -> Result<uint64_t> {
    SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, whole.File(name));
    return std::max<uint64_t>(kFileAlignment, r->info().block_bytes);
  };
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* offsets, whole.File(kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(uint64_t a, align(kOffsetsFile));
  const auto b = static_cast<uint64_t>(begin), e = static_cast<uint64_t>(end);
  SKIFF_RETURN_IF_ERROR(CopyWindow(whole, out, kOffsetsFile, AlignDown(b * 8, a), (e + 1) * 8));
  SKIFF_ASSIGN_OR_RETURN(const uint64_t e0, OffsetEntry(*offsets, begin));
  SKIFF_ASSIGN_OR_RETURN(const uint64_t e1, OffsetEntry(*offsets, end));
  if (e1 < e0 || e1 > static_cast<uint64_t>(m.num_edges)) {
    return Status::Corruption(offsets->path() + ": entries " + std::to_string(begin) + " and " +
                              std::to_string(end) + " (" + std::to_string(e0) + ", " +
                              std::to_string(e1) + ") are not a range of the " +
                              std::to_string(m.num_edges) + " edges");
  }
  const uint64_t width = DTypeBytes(m.neighbor_dtype);
  SKIFF_ASSIGN_OR_RETURN(a, align(kNeighborsFile));
  SKIFF_RETURN_IF_ERROR(
      CopyWindow(whole, out, kNeighborsFile, AlignDown(e0 * width, a), e1 * width));
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* features, whole.File(kFeaturesFile));
  const std::vector<uint64_t>& extents = m.feature_extent_offsets;
  const uint64_t f1 = p1 < extents.size() ? extents[p1] : features->info().data_bytes;
  return CopyWindow(whole, out, kFeaturesFile, extents[p0], f1);
}

}  // namespace

Status WriteShard(const Dataset& whole, std::span<const int64_t> rank_first, int rank,
                  const std::string& out_dir, bool overwrite) {
  std::vector<uint32_t> parts;
  SKIFF_RETURN_IF_ERROR(RankPartitions(whole, rank_first, rank, &parts));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> out,
                         DatasetWriter::Create(out_dir, overwrite));
  Manifest& m = out->manifest();
  m = whole.manifest();
  m.files.clear();
  m.link_split.reset();
  m.partitions->edge_buckets_file.clear();
  m.partitions->edge_buckets_index_file.clear();
  ShardInfo s;
  s.rank = rank;
  s.rank_first.assign(rank_first.begin(), rank_first.end());
  s.first_partition = parts[static_cast<size_t>(rank)];
  s.end_partition = parts[static_cast<size_t>(rank) + 1];
  s.dataset_xxh3 = whole.manifest().Checksum();
  m.shard = s;
  SKIFF_RETURN_IF_ERROR(CopyRangeFiles(whole, *out, s.begin_node(), s.end_node(), s.first_partition,
                                       s.end_partition));
  for (const char* name : {kLabelsFile, kTrainFile, kValidFile, kTestFile, kRelabelOldIdsFile}) {
    const auto it = whole.manifest().files.find(name);
    if (it == whole.manifest().files.end()) continue;  // relabel.old_ids: partitioned in place
    SKIFF_RETURN_IF_ERROR(CopyWindow(whole, *out, name, 0, it->second.data_bytes));
  }
  if (whole.manifest().has_id_map) {
    std::error_code ec;
    fs::copy(whole.dir() + "/" + kIdMapDir, out->temp_dir() + "/" + kIdMapDir,
             fs::copy_options::recursive, ec);
    if (ec) {
      return Status::IOError("copy " + whole.dir() + "/" + kIdMapDir + " to " + out->temp_dir() +
                             ": " + ec.message());
    }
  }
  return out->Commit();
}

}  // namespace skiff::format
