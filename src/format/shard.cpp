#include "skiff/format/shard.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "skiff/progress.h"

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

// Bytes [first, end) of the whole dataset's file `name`, copied into a file of the shard whose
// window_offset is `first` (0 for a whole copy).
struct Copy {
  std::string name;
  uint64_t first = 0, end = 0;
};

Status CopyWindow(const Dataset& whole, DatasetWriter& out, const Copy& c,
                  OptionalProgress& progress) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, whole.File(c.name));
  SKIFF_CHECK(c.first % std::max<uint64_t>(kFileAlignment, in->info().block_bytes) == 0);
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<ChecksummedFileWriter> file,
      ChecksummedFileWriter::Create(out.temp_dir(), c.name, in->info().block_bytes));
  std::vector<char> buf;
  for (uint64_t at = c.first; at < c.end; at += kCopyChunk) {
    buf.resize(std::min(kCopyChunk, c.end - at));
    SKIFF_RETURN_IF_ERROR(in->ReadAt(at, buf.size(), buf.data()));
    SKIFF_RETURN_IF_ERROR(file->Append(buf.data(), buf.size()));
    progress.Add(buf.size());
  }
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*file));
  out.manifest().files[c.name].window_offset = c.first;
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

// The three windows of the shard's nodes (format/shard.h), then the files copied whole.
Result<std::vector<Copy>> PlanCopies(const Dataset& whole, const ShardInfo& s) {
  const Manifest& m = whole.manifest();
  auto align = [&](const char* name) -> Result<uint64_t> {
    SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, whole.File(name));
    return std::max<uint64_t>(kFileAlignment, r->info().block_bytes);
  };
  std::vector<Copy> copies;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* offsets, whole.File(kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(uint64_t a, align(kOffsetsFile));
  const auto b = static_cast<uint64_t>(s.begin_node()), e = static_cast<uint64_t>(s.end_node());
  copies.push_back({kOffsetsFile, AlignDown(b * 8, a), (e + 1) * 8});
  SKIFF_ASSIGN_OR_RETURN(const uint64_t e0, OffsetEntry(*offsets, s.begin_node()));
  SKIFF_ASSIGN_OR_RETURN(const uint64_t e1, OffsetEntry(*offsets, s.end_node()));
  if (e1 < e0 || e1 > static_cast<uint64_t>(m.num_edges)) {
    return Status::Corruption(offsets->path() + ": entries " + std::to_string(b) + " and " +
                              std::to_string(e) + " (" + std::to_string(e0) + ", " +
                              std::to_string(e1) + ") are not a range of the " +
                              std::to_string(m.num_edges) + " edges");
  }
  const uint64_t width = DTypeBytes(m.neighbor_dtype);
  SKIFF_ASSIGN_OR_RETURN(a, align(kNeighborsFile));
  copies.push_back({kNeighborsFile, AlignDown(e0 * width, a), e1 * width});
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* features, whole.File(kFeaturesFile));
  const std::vector<uint64_t>& extents = m.feature_extent_offsets;
  const uint64_t f1 =
      s.end_partition < extents.size() ? extents[s.end_partition] : features->info().data_bytes;
  copies.push_back({kFeaturesFile, extents[s.first_partition], f1});
  for (const char* name : {kLabelsFile, kTrainFile, kValidFile, kTestFile, kRelabelOldIdsFile}) {
    const auto it = m.files.find(name);
    if (it == m.files.end()) continue;  // relabel.old_ids: partitioned in place
    copies.push_back({name, 0, it->second.data_bytes});
  }
  return copies;
}

}  // namespace

Status WriteShard(const Dataset& whole, std::span<const int64_t> rank_first, int rank,
                  const std::string& out_dir, bool overwrite, bool show_progress) {
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
  SKIFF_ASSIGN_OR_RETURN(const std::vector<Copy> copies, PlanCopies(whole, s));
  uint64_t total = 0;
  for (const Copy& c : copies) total += c.end - c.first;
  OptionalProgress progress(show_progress, "shard rank " + std::to_string(rank), total, "B");
  for (const Copy& c : copies) SKIFF_RETURN_IF_ERROR(CopyWindow(whole, *out, c, progress));
  progress.Finish();
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
