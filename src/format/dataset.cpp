#include "skiff/format/dataset.h"

#include "skiff/enum_names.h"
#include "skiff/format/content_checks.h"
#include "skiff/half.h"
#include "skiff/io/path_status.h"
#include "skiff/io/staged_dir.h"
#include "skiff/io/write_path.h"
#include "skiff/log.h"
#include "skiff/random.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <span>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace skiff::format {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr EnumName<DType> kDTypes[] = {{DType::kFloat32, "float32"},
                                       {DType::kFloat16, "float16"},
                                       {DType::kInt32, "int32"},
                                       {DType::kInt64, "int64"}};
}  // namespace

const char* DTypeName(DType t) { return NameOf(kDTypes, t); }

size_t DTypeBytes(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

Result<DType> ParseDType(const std::string& name) { return ParseName(kDTypes, "dtype", name); }

// --- Manifest JSON
// --------------------------------------------------------------------------------

namespace {
constexpr const char* kManifestChecksumField = "manifest_xxh3";

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Names and sources come from paths and flags, which need not be UTF-8: a byte that is not is
// written as U+FFFD instead of failing the whole dataset.
std::string DumpUtf8(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// XXH3-64 of the manifest's compact JSON without its checksum field (keys sorted, as nlohmann
// writes them): white space may change, any value may not.
uint64_t ManifestChecksum(json j) {
  j.erase(kManifestChecksumField);
  const std::string body = DumpUtf8(j, -1);
  return Xxh3(body.data(), body.size());
}

// A version 2 manifest carries its own checksum; version 1 (written before it had one) is read
// without.
Status VerifyManifestChecksum(const json& j, const std::string& path) {
  if (!j.is_object()) return Status::Ok();  // the field reader reports what is missing
  auto it = j.find(kManifestChecksumField);
  if (it == j.end()) {
    if (j.value("version", 0) < 2) return Status::Ok();
    return Status::Corruption(path + ": field '" + kManifestChecksumField + "' is missing");
  }
  const std::string recorded = it->is_string() ? it->get<std::string>() : "";
  if (recorded.size() != 16 ||
      recorded.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::Corruption(path + ": field '" + kManifestChecksumField +
                              "' is not 16 hex digits");
  }
  const std::string actual = Hex64(ManifestChecksum(j));
  if (recorded != actual) {
    return Status::Corruption(path + ": the manifest does not match its checksum (" +
                              kManifestChecksumField + " " + recorded + ", contents " + actual +
                              "): it was edited or damaged after it was written");
  }
  return Status::Ok();
}
}  // namespace

std::string Manifest::ToJson() const {
  json j;
  j["format"] = "skiff-dataset";
  j["version"] = version;
  j["name"] = name;
  j["source"] = source;
  j["num_nodes"] = num_nodes;
  j["num_edges"] = num_edges;
  j["undirected"] = undirected;
  j["neighbor_dtype"] = DTypeName(neighbor_dtype);
  j["feature_dim"] = feature_dim;
  j["feature_dtype"] = DTypeName(feature_dtype);
  j["num_classes"] = num_classes;
  j["splits"] = {{"train", train_count}, {"valid", valid_count}, {"test", test_count}};
  j["has_id_map"] = has_id_map;
  j["feature_extent_offsets"] = feature_extent_offsets;
  if (partitions) {
    const auto& p = *partitions;
    j["partitions"] = {{"count", p.num_partitions},
                       {"algorithm", p.algorithm},
                       {"boundaries", p.boundaries},
                       {"edge_cut_fraction", p.edge_cut_fraction},
                       {"imbalance", p.imbalance},
                       {"seconds", p.seconds},
                       {"peak_memory_bytes", p.peak_memory_bytes},
                       {"edge_buckets_file", p.edge_buckets_file},
                       {"edge_buckets_index_file", p.edge_buckets_index_file}};
  }
  if (link_split) {
    const auto& l = *link_split;
    j["link_split"] = {{"train", l.train},
                       {"valid", l.valid},
                       {"test", l.test},
                       {"valid_neg", l.valid_neg},
                       {"test_neg", l.test_neg},
                       {"candidates", l.candidates},
                       {"train_fraction", l.train_fraction},
                       {"valid_fraction", l.valid_fraction},
                       {"test_fraction", l.test_fraction},
                       {"seed", l.seed}};
  }
  if (shard) {
    j["shard"] = {{"rank", shard->rank},
                  {"rank_first", shard->rank_first},
                  {"first_partition", shard->first_partition},
                  {"end_partition", shard->end_partition},
                  {"dataset_xxh3", shard->dataset_xxh3}};
  }
  json files_j = json::object();
  for (const auto& [fname, info] : files) {
    files_j[fname] = {{"data_bytes", info.data_bytes},
                      {"checksum_block_bytes", info.block_bytes},
                      {"sum_xxh3", Hex64(info.sum_xxh3)}};
    if (info.window_offset != 0) files_j[fname]["window_offset"] = info.window_offset;
  }
  j["checksum_algorithm"] = "xxh3-64";
  j["files"] = files_j;
  if (version >= 2) j[kManifestChecksumField] = Hex64(ManifestChecksum(j));
  return DumpUtf8(j, 2) + "\n";
}

std::string Manifest::Checksum() const { return Hex64(ManifestChecksum(json::parse(ToJson()))); }

namespace {

PartitionInfo ReadPartitionInfo(const json& pj) {
  PartitionInfo p;
  p.num_partitions = pj.at("count").get<uint32_t>();
  p.algorithm = pj.at("algorithm").get<std::string>();
  p.boundaries = pj.at("boundaries").get<std::vector<int64_t>>();
  p.edge_cut_fraction = pj.value("edge_cut_fraction", 0.0);
  p.imbalance = pj.value("imbalance", 0.0);
  p.seconds = pj.value("seconds", 0.0);
  p.peak_memory_bytes = pj.value("peak_memory_bytes", uint64_t{0});
  p.edge_buckets_file = pj.value("edge_buckets_file", "");
  p.edge_buckets_index_file = pj.value("edge_buckets_index_file", "");
  return p;
}

ShardInfo ReadShardInfo(const json& sj) {
  ShardInfo s;
  s.rank = sj.at("rank").get<int>();
  s.rank_first = sj.at("rank_first").get<std::vector<int64_t>>();
  s.first_partition = sj.at("first_partition").get<uint32_t>();
  s.end_partition = sj.at("end_partition").get<uint32_t>();
  s.dataset_xxh3 = sj.at("dataset_xxh3").get<std::string>();
  return s;
}

LinkSplitInfo ReadLinkSplitInfo(const json& lj) {
  LinkSplitInfo l;
  l.train = lj.at("train").get<int64_t>();
  l.valid = lj.at("valid").get<int64_t>();
  l.test = lj.at("test").get<int64_t>();
  l.valid_neg = lj.value("valid_neg", int64_t{0});
  l.test_neg = lj.value("test_neg", int64_t{0});
  l.candidates = lj.value("candidates", int64_t{0});
  l.train_fraction = lj.value("train_fraction", 0.0);
  l.valid_fraction = lj.value("valid_fraction", 0.0);
  l.test_fraction = lj.value("test_fraction", 0.0);
  l.seed = lj.value("seed", uint64_t{0});
  return l;
}

// Reads the manifest's fields into *m, naming the one being read in *field: a missing or
// mistyped field throws (the caller names it); a wrong value is Corruption.
Status ReadManifestFields(const json& j, const std::string& path, Manifest* m, std::string* field) {
  *field = "format";
  if (j.at("format").get<std::string>() != "skiff-dataset") {
    return Status::Corruption(path + ": field 'format' is not \"skiff-dataset\"");
  }
  *field = "version";
  m->version = j.at("version").get<int>();
  if (m->version < kOldestReadableFormatVersion || m->version > kFormatVersion) {
    return Status::Corruption(path + ": format version " + std::to_string(m->version) +
                              " is not supported (this build reads versions " +
                              std::to_string(kOldestReadableFormatVersion) + " to " +
                              std::to_string(kFormatVersion) + ")");
  }
  *field = "name";
  m->name = j.value("name", "");
  *field = "source";
  m->source = j.value("source", "");
  *field = "num_nodes";
  m->num_nodes = j.at("num_nodes").get<int64_t>();
  *field = "num_edges";
  m->num_edges = j.at("num_edges").get<int64_t>();
  *field = "undirected";
  m->undirected = j.at("undirected").get<bool>();
  *field = "neighbor_dtype";
  SKIFF_ASSIGN_OR_RETURN(m->neighbor_dtype, ParseDType(j.at("neighbor_dtype").get<std::string>()));
  *field = "feature_dim";
  m->feature_dim = j.at("feature_dim").get<int64_t>();
  *field = "feature_dtype";
  SKIFF_ASSIGN_OR_RETURN(m->feature_dtype, ParseDType(j.at("feature_dtype").get<std::string>()));
  *field = "num_classes";
  m->num_classes = j.at("num_classes").get<int64_t>();
  *field = "splits";
  m->train_count = j.at("splits").at("train").get<int64_t>();
  m->valid_count = j.at("splits").at("valid").get<int64_t>();
  m->test_count = j.at("splits").at("test").get<int64_t>();
  *field = "has_id_map";
  m->has_id_map = j.value("has_id_map", false);
  *field = "feature_extent_offsets";
  m->feature_extent_offsets = j.at("feature_extent_offsets").get<std::vector<uint64_t>>();
  if (j.contains("partitions")) {
    *field = "partitions";
    m->partitions = ReadPartitionInfo(j.at("partitions"));
  }
  if (j.contains("link_split")) {
    *field = "link_split";
    if (m->version < 3) {
      return Status::Corruption(path + ": field 'link_split' appears in a version " +
                                std::to_string(m->version) +
                                " manifest; edge splits came with version 3");
    }
    m->link_split = ReadLinkSplitInfo(j.at("link_split"));
    if (m->link_split->candidates != 0 && m->version < 4) {
      return Status::Corruption(path + ": link_split.candidates appears in a version " +
                                std::to_string(m->version) +
                                " manifest; ranking candidates came with version 4");
    }
  }
  if (j.contains("shard")) {
    *field = "shard";
    if (m->version < 5) {
      return Status::Corruption(path + ": field 'shard' appears in a version " +
                                std::to_string(m->version) +
                                " manifest; shards came with version 5");
    }
    m->shard = ReadShardInfo(j.at("shard"));
  }
  *field = "files";
  for (const auto& [fname, fj] : j.at("files").items()) {
    FileInfo info;
    info.name = fname;
    info.data_bytes = fj.at("data_bytes").get<uint64_t>();
    info.window_offset = fj.value("window_offset", uint64_t{0});
    info.block_bytes = fj.at("checksum_block_bytes").get<uint32_t>();
    info.sum_xxh3 = std::stoull(fj.at("sum_xxh3").get<std::string>(), nullptr, 16);
    m->files[fname] = info;
  }
  return Status::Ok();
}

// The partitioning against the node count and the feature extents: each extent holds its
// partition's rows, padded to the next 4 KiB, so boundaries that do not match the extents would
// read rows from the wrong places.
Status CheckPartitionLayout(const Manifest& m, const std::string& path) {
  auto bad = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  const PartitionInfo& p = *m.partitions;
  if (p.num_partitions == 0 || p.boundaries.size() != p.num_partitions + 1 ||
      p.boundaries.front() != 0 || p.boundaries.back() != m.num_nodes ||
      !std::is_sorted(p.boundaries.begin(), p.boundaries.end())) {
    return bad("partition boundaries are inconsistent with num_nodes");
  }
  if (m.feature_extent_offsets.size() != p.num_partitions) {
    return bad("feature_extent_offsets has " + std::to_string(m.feature_extent_offsets.size()) +
               " entries, expected one per partition (" + std::to_string(p.num_partitions) + ")");
  }
  for (uint32_t q = 0; q + 1 < p.num_partitions; ++q) {
    const uint64_t rows = static_cast<uint64_t>(p.boundaries[q + 1] - p.boundaries[q]);
    const uint64_t end =
        AlignUp(m.feature_extent_offsets[q] + rows * m.feature_row_bytes(), kFileAlignment);
    if (m.feature_extent_offsets[0] != 0 || m.feature_extent_offsets[q + 1] != end) {
      return bad("partition " + std::to_string(q) + " has " + std::to_string(rows) +
                 " nodes by its boundaries, but its feature extent holds " +
                 std::to_string((m.feature_extent_offsets[q + 1] - m.feature_extent_offsets[q]) /
                                std::max<uint64_t>(m.feature_row_bytes(), 1)) +
                 " rows: boundaries and feature_extent_offsets disagree");
    }
  }
  return Status::Ok();
}

// A shard's fields: a valid rank of ranges of the partitions that end at N, its range at the
// partitions it names, and no edge split (shards leave it out).
Status CheckShardInfo(const Manifest& m, const std::string& path) {
  auto bad = [&](const std::string& what) { return Status::Corruption(path + ": shard." + what); };
  const ShardInfo& s = *m.shard;
  if (!m.partitions) return bad("rank appears in a manifest without partitions");
  if (s.rank_first.size() < 2 || s.rank_first.front() != 0 || s.rank_first.back() != m.num_nodes ||
      !std::is_sorted(s.rank_first.begin(), s.rank_first.end())) {
    return bad("rank_first is not a run of node ranges from 0 to num_nodes");
  }
  if (s.rank < 0 || s.rank >= s.ranks()) {
    return bad("rank " + std::to_string(s.rank) + " is not one of the " +
               std::to_string(s.ranks()) + " ranks");
  }
  const std::vector<int64_t>& b = m.partitions->boundaries;
  if (s.first_partition >= s.end_partition || s.end_partition >= b.size() ||
      b[s.first_partition] != s.begin_node() || b[s.end_partition] != s.end_node()) {
    return bad("first_partition and end_partition (" + std::to_string(s.first_partition) + ", " +
               std::to_string(s.end_partition) + ") are not the partitions of nodes [" +
               std::to_string(s.begin_node()) + ", " + std::to_string(s.end_node()) + ")");
  }
  if (s.dataset_xxh3.size() != 16) return bad("dataset_xxh3 is not 16 hex digits");
  if (!m.partitions->edge_buckets_file.empty()) {
    return bad("rank appears with edge buckets (shards leave them out)");
  }
  if (m.link_split) return bad("rank appears with an edge split (shards leave it out)");
  return Status::Ok();
}

// Structural validation of a manifest whose fields were read.
Status CheckManifest(const Manifest& m, const std::string& path) {
  auto bad = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  for (const auto& [field, count] : {std::pair<const char*, int64_t>{"num_nodes", m.num_nodes},
                                     {"num_edges", m.num_edges},
                                     {"feature_dim", m.feature_dim},
                                     {"num_classes", m.num_classes}}) {
    if (count < 0) return bad(std::string(field) + " is negative (" + std::to_string(count) + ")");
  }
  if (m.num_classes > kMaxClasses) {
    return bad("num_classes is " + std::to_string(m.num_classes) +
               ", above the limit of 2^24 = " + std::to_string(kMaxClasses));
  }
  if (m.link_split) {
    const LinkSplitInfo& l = *m.link_split;
    for (const auto& [field, count] : {std::pair<const char*, int64_t>{"train", l.train},
                                       {"valid", l.valid},
                                       {"test", l.test},
                                       {"valid_neg", l.valid_neg},
                                       {"test_neg", l.test_neg},
                                       {"candidates", l.candidates}}) {
      if (count < 0) {
        return bad(std::string("link_split.") + field + " is negative (" + std::to_string(count) +
                   ")");
      }
    }
    for (const double f : {l.train_fraction, l.valid_fraction, l.test_fraction}) {
      if (!(f >= 0 && f <= 1)) return bad("link_split holds a fraction outside [0, 1]");
    }
    if (l.candidates > 0 && m.undirected) {
      return bad("link_split.candidates on an undirected dataset (candidates need directed pairs)");
    }
  }
  if (m.feature_extent_offsets.empty()) return bad("feature_extent_offsets is empty");
  for (uint64_t off : m.feature_extent_offsets) {
    if (off % kFileAlignment != 0) return bad("feature extent offset not 4 KiB aligned");
  }
  for (const auto& [name, info] : m.files) {
    if (info.window_offset % kFileAlignment != 0 ||
        (info.block_bytes != 0 && info.window_offset % info.block_bytes != 0)) {
      return bad("files." + name + ".window_offset " + std::to_string(info.window_offset) +
                 " is not a multiple of 4 KiB and of its checksum block");
    }
    if (info.window_offset != 0 && !m.shard) {
      return bad("files." + name + " has a window_offset, but the manifest is not a shard's");
    }
  }
  if (m.shard) SKIFF_RETURN_IF_ERROR(CheckShardInfo(m, path));
  if (m.partitions) return CheckPartitionLayout(m, path);
  if (m.feature_extent_offsets.size() != 1) {
    return bad("unpartitioned dataset must have exactly one feature extent");
  }
  return Status::Ok();
}

}  // namespace

Result<Manifest> Manifest::FromJson(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 5e999
    return Status::Corruption(path + ": not valid JSON (" + e.what() + ")");
  }
  SKIFF_RETURN_IF_ERROR(VerifyManifestChecksum(j, path));
  Manifest m;
  std::string field;
  try {
    SKIFF_RETURN_IF_ERROR(ReadManifestFields(j, path, &m, &field));
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": field '" + field + "' is missing or malformed (" +
                              e.what() + ")");
  }
  SKIFF_RETURN_IF_ERROR(CheckManifest(m, path));
  return m;
}

// --- Writer
// ---------------------------------------------------------------------------------------

DatasetWriter::DatasetWriter(std::unique_ptr<io::StagedDirectory> staged)
    : staged_(std::move(staged)) {}

DatasetWriter::~DatasetWriter() = default;

namespace {

// What runs that died while writing `dir` may have left beside it, besides the staging directory
// and a previous dataset moved aside (io::CleanUpAfterDeadRuns): `skiff convert --partitions`
// staging.
const std::vector<std::string> kMoreSiblings{".unpartitioned-"};

// Called when nothing is at `dir`: if a run died between the two renames of replacing it (a
// `<dir>.old-<pid>` of a dead run is left), moves the previous dataset back, under dir's lock.
void RecoverInterruptedReplace(const std::string& dir) {
  std::error_code ec;
  const fs::path path = fs::absolute(dir, ec);
  if (ec || !path.has_parent_path()) return;
  const std::string prefix = path.filename().string() + ".old-";
  bool found = false;
  for (const auto& entry : fs::directory_iterator(path.parent_path(), ec)) {
    found = found || io::LeftByDeadRun(entry.path().filename().string(), prefix);
  }
  if (!found) return;
  auto lock = PathLock::Acquire(dir);
  if (lock.ok()) io::CleanUpAfterDeadRuns(dir, kMoreSiblings);
}

}  // namespace

// --overwrite replaces a dataset (or an empty directory), never a file or a directory holding
// anything else: `-o ~/work --overwrite` must not delete ~/work.
Status DatasetWriter::CheckReplaceable(const std::string& dir, bool overwrite) {
  if (!overwrite) {
    return Status::InvalidArgument("output " + dir +
                                   " already exists (remove it or pass --overwrite)");
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::InvalidArgument("output " + dir +
                                   " exists and is not a directory: overwriting replaces only a "
                                   "Skiff dataset (remove it yourself, or choose another path)");
  }
  if (fs::is_empty(dir, ec) || fs::exists(fs::path(dir) / kManifestFile, ec)) return Status::Ok();
  return Status::InvalidArgument("output " + dir +
                                 " exists and is not a Skiff dataset (it has no " + kManifestFile +
                                 "): overwriting replaces only a dataset (remove it yourself, or "
                                 "choose another path)");
}

Result<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(const std::string& final_dir,
                                                             bool overwrite) {
  auto replaceable = [overwrite](const std::string& dir) {
    return CheckReplaceable(dir, overwrite);
  };
  SKIFF_ASSIGN_OR_RETURN(auto staged,
                         io::StagedDirectory::Create(final_dir, replaceable, kMoreSiblings));
  return std::unique_ptr<DatasetWriter>(new DatasetWriter(std::move(staged)));
}

Result<std::unique_ptr<ChecksummedFileWriter>> DatasetWriter::CreateFile(const std::string& name) {
  return ChecksummedFileWriter::Create(temp_dir(), name);
}

Status DatasetWriter::FinishFile(ChecksummedFileWriter& file) {
  SKIFF_ASSIGN_OR_RETURN(FileInfo info, file.Finish());
  manifest_.files[info.name] = info;
  return Status::Ok();
}

Status DatasetWriter::WriteFile(const std::string& name, const void* data, size_t bytes) {
  SKIFF_ASSIGN_OR_RETURN(auto file, CreateFile(name));
  SKIFF_RETURN_IF_ERROR(file->Append(data, bytes));
  return FinishFile(*file);
}

namespace {
// The manifest, written last into the staging directory and fsync'ed.
Status WriteManifest(const std::string& path, const std::string& json) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + path);
  Status st = io::WriteAll(fd, json.data(), json.size(), path);
  if (st.ok()) st = io::Fsync(fd, path);
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno(errno, "close " + path);
  return st;
}

Status CheckFileSize(const Manifest& m, const std::string& name, uint64_t expected) {
  auto it = m.files.find(name);
  if (it == m.files.end()) return Status::Internal("dataset is missing required file " + name);
  if (it->second.data_bytes != expected) {
    return Status::Internal(name + " holds " + std::to_string(it->second.data_bytes) +
                            " bytes, expected " + std::to_string(expected));
  }
  return Status::Ok();
}

// A windowed file (a shard's) of a whole file of `whole` bytes: its window lies within the whole
// file and covers `need` ([first, end) bytes; none: graph.neighbors, whose rows are known from
// graph.offsets only, and which the reader keeps to its window).
Status CheckWindow(const Manifest& m, const std::string& name,
                   std::optional<std::pair<uint64_t, uint64_t>> need, uint64_t whole) {
  auto it = m.files.find(name);
  if (it == m.files.end()) return Status::Internal("dataset is missing required file " + name);
  const uint64_t first = it->second.window_offset, end = first + it->second.data_bytes;
  const auto [need_first, need_end] = need.value_or(std::pair<uint64_t, uint64_t>{first, first});
  if (first > need_first || end < need_end || end > whole) {
    return Status::Internal(name + " holds bytes [" + std::to_string(first) + ", " +
                            std::to_string(end) + ") of the whole file's " + std::to_string(whole) +
                            ", expected a window of them covering [" + std::to_string(need_first) +
                            ", " + std::to_string(need_end) + ") (rank " +
                            std::to_string(m.shard->rank) + "'s nodes)");
  }
  return Status::Ok();
}

// The bytes of the whole features.bin: the last extent ends the file.
uint64_t WholeFeatureBytes(const Manifest& m) {
  const int64_t last_first =
      m.partitions ? m.partitions->boundaries[m.partitions->num_partitions - 1] : 0;
  return m.feature_extent_offsets.back() +
         static_cast<uint64_t>(m.num_nodes - last_first) * m.feature_row_bytes();
}

// A shard's three windowed files against the rank's nodes (CheckShardInfo checked the fields).
Status ValidateShardWindows(const Manifest& m) {
  const ShardInfo& s = *m.shard;
  const auto n = static_cast<uint64_t>(m.num_nodes);
  const auto b = static_cast<uint64_t>(s.begin_node()), e = static_cast<uint64_t>(s.end_node());
  SKIFF_RETURN_IF_ERROR(CheckWindow(m, kOffsetsFile, {{b * 8, (e + 1) * 8}}, (n + 1) * 8));
  const uint64_t edges = static_cast<uint64_t>(m.num_edges) * DTypeBytes(m.neighbor_dtype);
  SKIFF_RETURN_IF_ERROR(CheckWindow(m, kNeighborsFile, std::nullopt, edges));
  const uint64_t whole = WholeFeatureBytes(m);
  const uint64_t end = s.end_partition < m.feature_extent_offsets.size()
                           ? m.feature_extent_offsets[s.end_partition]
                           : whole;
  return CheckWindow(m, kFeaturesFile, {{m.feature_extent_offsets[s.first_partition], end}}, whole);
}

// Checks that the files a manifest lists have the sizes its counts imply.
Status ValidateSizes(const Manifest& m) {
  const uint64_t n = static_cast<uint64_t>(m.num_nodes);
  if (m.shard) {
    SKIFF_RETURN_IF_ERROR(ValidateShardWindows(m));
  } else {
    SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kOffsetsFile, (n + 1) * 8));
    SKIFF_RETURN_IF_ERROR(CheckFileSize(
        m, kNeighborsFile, static_cast<uint64_t>(m.num_edges) * DTypeBytes(m.neighbor_dtype)));
  }
  SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kLabelsFile, n * 4));
  SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kTrainFile, static_cast<uint64_t>(m.train_count) * 8));
  SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kValidFile, static_cast<uint64_t>(m.valid_count) * 8));
  SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kTestFile, static_cast<uint64_t>(m.test_count) * 8));
  if (m.link_split) {
    const LinkSplitInfo& l = *m.link_split;
    SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kLinkTrainFile, static_cast<uint64_t>(l.train) * 16));
    SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kLinkValidFile, static_cast<uint64_t>(l.valid) * 16));
    SKIFF_RETURN_IF_ERROR(CheckFileSize(m, kLinkTestFile, static_cast<uint64_t>(l.test) * 16));
    // A non-edge file with no pairs may be absent.
    for (const auto& [name, count] :
         {std::pair<const char*, int64_t>{kLinkValidNegFile, l.valid_neg},
          {kLinkTestNegFile, l.test_neg}}) {
      if (count > 0 || m.files.count(name)) {
        SKIFF_RETURN_IF_ERROR(CheckFileSize(m, name, static_cast<uint64_t>(count) * 16));
      }
    }
    if (l.candidates > 0) {
      const auto k = static_cast<uint64_t>(l.candidates);
      SKIFF_RETURN_IF_ERROR(
          CheckFileSize(m, kLinkValidCandFile, static_cast<uint64_t>(l.valid) * k * 8));
      SKIFF_RETURN_IF_ERROR(
          CheckFileSize(m, kLinkTestCandFile, static_cast<uint64_t>(l.test) * k * 8));
    }
  }
  if (m.shard) return Status::Ok();
  return CheckFileSize(m, kFeaturesFile, WholeFeatureBytes(m));
}
}  // namespace

Status DatasetWriter::Commit() {
  SKIFF_CHECK(!committed_);
  SKIFF_RETURN_IF_ERROR(ValidateSizes(manifest_).WithContext("refusing to commit " + final_dir()));
  manifest_.version = kFormatVersion;  // a copied manifest may have been read from an older one
  SKIFF_RETURN_IF_ERROR(WriteManifest(temp_dir() + "/" + kManifestFile, manifest_.ToJson()));
  SKIFF_RETURN_IF_ERROR(staged_->Publish());
  committed_ = true;
  return Status::Ok();
}

// --- Reader
// ---------------------------------------------------------------------------------------

Result<std::unique_ptr<Dataset>> Dataset::Open(const std::string& dir) {
  const std::string path = dir + "/" + kManifestFile;
  std::error_code exists_ec;
  if (!fs::exists(dir, exists_ec)) RecoverInterruptedReplace(dir);
  std::ifstream in(path);
  if (!in) {
    const int open_errno = errno;
    SKIFF_RETURN_IF_ERROR(io::StatPath("dataset directory", dir));
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return Status::InvalidArgument(dir + " is a file, not a dataset directory");
    }
    const Status manifest = io::StatPath("manifest", path);
    if (manifest.code() == StatusCode::kNotFound) {
      return Status::NotFound(path + " is missing: " + dir + " is not a Skiff dataset");
    }
    SKIFF_RETURN_IF_ERROR(manifest);
    return Status::FromErrno(open_errno, "open " + path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  SKIFF_ASSIGN_OR_RETURN(Manifest m, Manifest::FromJson(ss.str(), path));
  if (const Status sizes = ValidateSizes(m); !sizes.ok()) {
    return Status::Corruption(path + ": " + sizes.message());
  }
  std::error_code ec;
  if (m.has_id_map && !fs::is_directory(dir + "/" + kIdMapDir, ec)) {
    return Status::Corruption(path + ": has_id_map is true, but " + dir + "/" + kIdMapDir +
                              " is missing");
  }
  std::unique_ptr<Dataset> ds(new Dataset(dir, std::move(m)));
  for (const auto& [name, info] : ds->manifest_.files) {
    SKIFF_ASSIGN_OR_RETURN(auto reader, ChecksummedFileReader::Open(dir, info));
    ds->readers_[name] = std::move(reader);
  }
  return ds;
}

Status Dataset::RequireWhole(const std::string& what) const {
  if (!is_shard()) return Status::Ok();
  const ShardInfo& s = *manifest_.shard;
  return Status::InvalidArgument(
      dir_ + " is rank " + std::to_string(s.rank) + "'s shard of a " + std::to_string(s.ranks()) +
      "-rank job (skiff shard): it holds the lists and feature rows of nodes [" +
      std::to_string(s.begin_node()) + ", " + std::to_string(s.end_node()) + ") only, and " + what +
      " needs the whole dataset");
}

Result<const ChecksummedFileReader*> Dataset::File(const std::string& name) const {
  auto it = readers_.find(name);
  if (it == readers_.end()) return Status::NotFound(dir_ + ": dataset has no file " + name);
  return static_cast<const ChecksummedFileReader*>(it->second.get());
}

namespace {
// The file's items, or its first `max_items` when that is >= 0 (only their blocks are read).
template <typename T>
Result<std::vector<T>> LoadArray(const Dataset& ds, const std::string& name,
                                 int64_t max_items = -1) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, ds.File(name));
  size_t items = r->info().data_bytes / sizeof(T);
  if (max_items >= 0) items = std::min(items, static_cast<size_t>(max_items));
  std::vector<T> v(items);
  SKIFF_RETURN_IF_ERROR(r->ReadAt(0, v.size() * sizeof(T), v.data()));
  return v;
}
}  // namespace

Result<std::vector<int64_t>> Dataset::LoadOffsets() const {
  SKIFF_RETURN_IF_ERROR(RequireWhole("loading every node's offsets"));
  SKIFF_ASSIGN_OR_RETURN(auto v, LoadArray<int64_t>(*this, kOffsetsFile));
  SKIFF_RETURN_IF_ERROR(
      CheckOffsets(dir_ + "/" + kOffsetsFile, v, 0, 0, manifest_.num_nodes, manifest_.num_edges));
  return v;
}

Status Dataset::NeighborIdError(int64_t entry, int64_t value) const {
  SKIFF_ASSIGN_OR_RETURN(const auto offsets, LoadOffsets());
  const auto row = std::upper_bound(offsets.begin(), offsets.end(), entry) - offsets.begin() - 1;
  return NeighborOutOfRange(dir_ + "/" + kNeighborsFile, row, value, manifest_.num_nodes);
}

Result<std::vector<int64_t>> Dataset::LoadNeighbors() const {
  SKIFF_RETURN_IF_ERROR(RequireWhole("loading every adjacency list"));
  std::vector<int64_t> v;
  int64_t bad = -1;
  if (manifest_.neighbor_dtype == DType::kInt64) {
    SKIFF_ASSIGN_OR_RETURN(v, LoadArray<int64_t>(*this, kNeighborsFile));
    bad = FirstIdOutOfRange(std::span<const int64_t>(v), manifest_.num_nodes);
  } else {
    SKIFF_ASSIGN_OR_RETURN(auto v32, LoadArray<int32_t>(*this, kNeighborsFile));
    bad = FirstIdOutOfRange(std::span<const int32_t>(v32), manifest_.num_nodes);
    v.assign(v32.begin(), v32.end());
  }
  if (bad >= 0) return NeighborIdError(bad, v[static_cast<size_t>(bad)]);
  return v;
}

Result<std::vector<int32_t>> Dataset::LoadLabels() const {
  SKIFF_ASSIGN_OR_RETURN(auto labels, LoadArray<int32_t>(*this, kLabelsFile));
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] < -1 || labels[v] >= manifest_.num_classes) {
      return Status::Corruption(dir_ + "/" + kLabelsFile + ": node " + std::to_string(v) +
                                " has label " + std::to_string(labels[v]) +
                                ", outside [-1, num_classes = " +
                                std::to_string(manifest_.num_classes) + ") of " + kManifestFile);
    }
  }
  return labels;
}

Result<std::vector<int64_t>> Dataset::LoadSplitFile(const std::string& name) const {
  SKIFF_ASSIGN_OR_RETURN(auto ids, LoadArray<int64_t>(*this, name));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= manifest_.num_nodes || (i > 0 && ids[i] <= ids[i - 1])) {
      return Status::Corruption(dir_ + "/" + name + ": entry " + std::to_string(i) + " is node " +
                                std::to_string(ids[i]) + "; expected ascending node IDs in [0, " +
                                std::to_string(manifest_.num_nodes) + ")");
    }
  }
  return ids;
}

Result<Dataset::NodeSplits> Dataset::LoadSplits() const {
  NodeSplits s;
  SKIFF_ASSIGN_OR_RETURN(s.train, LoadSplitFile(kTrainFile));
  SKIFF_ASSIGN_OR_RETURN(s.valid, LoadSplitFile(kValidFile));
  SKIFF_ASSIGN_OR_RETURN(s.test, LoadSplitFile(kTestFile));
  const std::vector<int64_t>* splits[] = {&s.train, &s.valid, &s.test};
  const char* names[] = {kTrainFile, kValidFile, kTestFile};
  SKIFF_RETURN_IF_ERROR(CheckSplitsDisjoint(dir_, splits, names, manifest_.num_nodes));
  return s;
}

Result<std::vector<int64_t>> Dataset::LoadSplit(const std::string& name) const {
  if (name != kTrainFile && name != kValidFile && name != kTestFile) {
    return Status::InvalidArgument(name + " is not a node split file (" + kTrainFile + ", " +
                                   kValidFile + ", " + kTestFile + ")");
  }
  SKIFF_ASSIGN_OR_RETURN(NodeSplits s, LoadSplits());
  if (name == kTrainFile) return std::move(s.train);
  return std::move(name == kValidFile ? s.valid : s.test);
}

Result<std::vector<int64_t>> Dataset::LoadOldIds() const {
  const int64_t n = manifest_.num_nodes;
  std::vector<int64_t> old_ids(static_cast<size_t>(n));
  if (!manifest_.files.count(kRelabelOldIdsFile)) {
    std::iota(old_ids.begin(), old_ids.end(), int64_t{0});
    return old_ids;
  }
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, File(kRelabelOldIdsFile));
  if (r->info().data_bytes != static_cast<uint64_t>(n) * 8) {
    return Status::Corruption(r->path() + ": holds " + std::to_string(r->info().data_bytes) +
                              " bytes, expected 8 per node (" + std::to_string(n) + " nodes)");
  }
  SKIFF_RETURN_IF_ERROR(r->ReadAt(0, static_cast<uint64_t>(n) * 8, old_ids.data()));
  SKIFF_RETURN_IF_ERROR(CheckPermutation(r->path(), old_ids));
  return old_ids;
}

namespace {
constexpr const char* kLinkFiles[] = {kLinkTrainFile, kLinkValidFile, kLinkTestFile,
                                      kLinkValidNegFile, kLinkTestNegFile};
}  // namespace

Result<std::vector<int64_t>> Dataset::LoadEdgePairs(const std::string& name,
                                                    int64_t max_pairs) const {
  if (std::find(std::begin(kLinkFiles), std::end(kLinkFiles), name) == std::end(kLinkFiles)) {
    return Status::InvalidArgument(name + " is not an edge-split file (link_*.edges)");
  }
  if (!manifest_.link_split) {
    return Status::NotFound(dir_ + ": dataset has no edge split (no link_split in " +
                            kManifestFile + "; `skiff split-edges` makes one)");
  }
  if (!manifest_.files.count(name)) {
    const auto& l = *manifest_.link_split;
    if ((name == kLinkValidNegFile && l.valid_neg == 0) ||
        (name == kLinkTestNegFile && l.test_neg == 0)) {
      return std::vector<int64_t>{};
    }
  }
  SKIFF_ASSIGN_OR_RETURN(auto pairs,
                         LoadArray<int64_t>(*this, name, max_pairs >= 0 ? 2 * max_pairs : -1));
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i] < 0 || pairs[i] >= manifest_.num_nodes) {
      return Status::Corruption(dir_ + "/" + name + ": pair " + std::to_string(i / 2) + " (" +
                                std::to_string(pairs[i & ~size_t{1}]) + ", " +
                                std::to_string(pairs[i | 1]) + ") has an endpoint outside [0, " +
                                std::to_string(manifest_.num_nodes) + ")");
    }
  }
  return pairs;
}

Result<std::vector<int64_t>> Dataset::LoadCandidates(const std::string& name,
                                                     int64_t max_pairs) const {
  if (name != kLinkValidCandFile && name != kLinkTestCandFile) {
    return Status::InvalidArgument(name + " is not a candidate file (link_*_cand.nodes)");
  }
  if (!manifest_.link_split || manifest_.link_split->candidates == 0) {
    return std::vector<int64_t>{};
  }
  const int64_t k = manifest_.link_split->candidates;
  SKIFF_ASSIGN_OR_RETURN(auto ids,
                         LoadArray<int64_t>(*this, name, max_pairs >= 0 ? k * max_pairs : -1));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= manifest_.num_nodes) {
      return Status::Corruption(
          dir_ + "/" + name + ": candidate " + std::to_string(static_cast<int64_t>(i) % k) +
          " of pair " + std::to_string(static_cast<int64_t>(i) / k) + " is node " +
          std::to_string(ids[i]) + ", outside [0, " + std::to_string(manifest_.num_nodes) + ")");
    }
  }
  return ids;
}

uint64_t Dataset::FeatureRowOffset(int64_t node) const {
  SKIFF_CHECK(node >= 0 && node < manifest_.num_nodes);
  size_t part = 0;
  int64_t first = 0;
  if (manifest_.partitions) {
    const auto& b = manifest_.partitions->boundaries;
    part = static_cast<size_t>(std::upper_bound(b.begin(), b.end(), node) - b.begin() - 1);
    first = b[part];
  }
  return manifest_.feature_extent_offsets[part] +
         static_cast<uint64_t>(node - first) * manifest_.feature_row_bytes();
}

Status Dataset::ReadFeatureRows(int64_t first, int64_t count, float* dst) const {
  SKIFF_CHECK(first >= 0 && count >= 0 && first + count <= manifest_.num_nodes);
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, File(kFeaturesFile));
  const int64_t dim = manifest_.feature_dim;
  const uint64_t row_bytes = manifest_.feature_row_bytes();
  std::vector<char> buf;
  int64_t node = first;
  while (node < first + count) {
    // Rows are contiguous within a partition; read up to the end of the partition.
    int64_t run_end = first + count;
    if (manifest_.partitions) {
      const auto& b = manifest_.partitions->boundaries;
      const auto part = std::upper_bound(b.begin(), b.end(), node) - b.begin() - 1;
      run_end = std::min<int64_t>(run_end, b[static_cast<size_t>(part) + 1]);
    }
    const int64_t rows = run_end - node;
    float* out = dst + (node - first) * dim;
    if (manifest_.feature_dtype == DType::kFloat32) {
      SKIFF_RETURN_IF_ERROR(r->ReadAt(FeatureRowOffset(node), rows * row_bytes, out));
    } else {
      buf.resize(rows * row_bytes);
      SKIFF_RETURN_IF_ERROR(r->ReadAt(FeatureRowOffset(node), buf.size(), buf.data()));
      const auto* h = reinterpret_cast<const uint16_t*>(buf.data());
      HalfToFloatRow(h, out, static_cast<size_t>(rows * dim));
    }
    const int64_t bad = FirstNonFinite({out, static_cast<size_t>(rows * dim)});
    if (bad >= 0) return NonFiniteFeature(r->path(), node + bad / dim, bad % dim, out[bad]);
    node = run_end;
  }
  return Status::Ok();
}

Result<std::vector<float>> Dataset::LoadFeatures() const {
  SKIFF_RETURN_IF_ERROR(RequireWhole("loading every feature row"));
  std::vector<float> v(static_cast<size_t>(manifest_.num_nodes * manifest_.feature_dim));
  SKIFF_RETURN_IF_ERROR(ReadFeatureRows(0, manifest_.num_nodes, v.data()));
  return v;
}

namespace {

// Reads elements [first, first + count) of an int64 or int32 file into `out`, widened.
Status ReadInts(const ChecksummedFileReader& r, DType dtype, int64_t first, int64_t count,
                std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(count));
  if (dtype == DType::kInt64) {
    return r.ReadAt(static_cast<uint64_t>(first) * 8, static_cast<uint64_t>(count) * 8,
                    out->data());
  }
  std::vector<int32_t> narrow(static_cast<size_t>(count));
  SKIFF_RETURN_IF_ERROR(
      r.ReadAt(static_cast<uint64_t>(first) * 4, static_cast<uint64_t>(count) * 4, narrow.data()));
  std::copy(narrow.begin(), narrow.end(), out->begin());
  return Status::Ok();
}

constexpr int64_t kVerifyChunkNodes = 1 << 20;

}  // namespace

Result<std::vector<int64_t>> Dataset::LoadOffsetsRange(int64_t first, int64_t count) const {
  SKIFF_CHECK(first >= 0 && count >= 0 && first + count <= manifest_.num_nodes);
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* offsets_file, File(kOffsetsFile));
  std::vector<int64_t> offsets;
  SKIFF_RETURN_IF_ERROR(ReadInts(*offsets_file, DType::kInt64, first, count + 1, &offsets));
  // Entry `first` is only checked against 0 and num_edges: the one before it is not read.
  const int64_t previous = first == 0 ? 0 : std::max<int64_t>(offsets.front(), 0);
  SKIFF_RETURN_IF_ERROR(CheckOffsets(offsets_file->path(), offsets, first, previous,
                                     manifest_.num_nodes, manifest_.num_edges));
  return offsets;
}

Status Dataset::LoadGraphRange(int64_t first, int64_t count, std::vector<int64_t>* offsets,
                               std::vector<int64_t>* neighbors) const {
  const int64_t n = manifest_.num_nodes;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* neighbors_file, File(kNeighborsFile));
  SKIFF_ASSIGN_OR_RETURN(*offsets, LoadOffsetsRange(first, count));
  const int64_t base = offsets->front();
  SKIFF_RETURN_IF_ERROR(
      ReadInts(*neighbors_file, manifest_.neighbor_dtype, base, offsets->back() - base, neighbors));
  for (int64_t& at : *offsets) at -= base;
  const int64_t bad = FirstIdOutOfRange(std::span<const int64_t>(*neighbors), n);
  if (bad >= 0) return NeighborIdError(base + bad, (*neighbors)[static_cast<size_t>(bad)]);
  return Status::Ok();
}

Status Dataset::VerifyGraph(uint64_t* edge_sum) const {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* offsets_file, File(kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* neighbors_file, File(kNeighborsFile));
  const int64_t n = manifest_.num_nodes;
  const std::string where = dir_ + "/" + kNeighborsFile;
  uint64_t forward = 0;
  uint64_t backward = 0;
  std::vector<int64_t> offsets;
  std::vector<int64_t> neighbors;
  const int64_t lo = begin_node(), hi = end_node();
  for (int64_t first = lo; first < hi; first += kVerifyChunkNodes) {
    const int64_t count = std::min(kVerifyChunkNodes, hi - first);
    // A shard's first entry is only checked against 0 and num_edges (the one before is not held).
    const int64_t previous = first == lo ? (first == 0 ? 0 : -1) : offsets.back();
    SKIFF_RETURN_IF_ERROR(ReadInts(*offsets_file, DType::kInt64, first, count + 1, &offsets));
    SKIFF_RETURN_IF_ERROR(
        CheckOffsets(offsets_file->path(), offsets, first, previous, n, manifest_.num_edges));
    SKIFF_RETURN_IF_ERROR(ReadInts(*neighbors_file, manifest_.neighbor_dtype, offsets[0],
                                   offsets.back() - offsets[0], &neighbors));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t u = first + i;
      for (int64_t e = offsets[i]; e < offsets[i + 1]; ++e) {
        const int64_t v = neighbors[static_cast<size_t>(e - offsets[0])];
        if (v < 0 || v >= n) return NeighborOutOfRange(where, u, v, n);
        const int64_t before =
            e > offsets[i] ? neighbors[static_cast<size_t>(e - 1 - offsets[0])] : v;
        if (v < before) {
          return Status::Corruption(where + ": node " + std::to_string(u) + " has neighbour " +
                                    std::to_string(v) + " after " + std::to_string(before) +
                                    "; neighbours must be in ascending order within a row");
        }
        forward += EdgeHash(u, v);
        backward += EdgeHash(v, u);
      }
    }
  }
  *edge_sum = forward;
  if (manifest_.undirected && !is_shard() && forward != backward) {
    return Status::Corruption(where +
                              ": the manifest says undirected, but some edge (u, v) is "
                              "stored without (v, u)");
  }
  return Status::Ok();
}

Status Dataset::VerifyRelabelling() const {
  if (!manifest_.files.count(kRelabelOldIdsFile)) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, File(kRelabelOldIdsFile));
  const int64_t n = manifest_.num_nodes;
  if (r->info().data_bytes != static_cast<uint64_t>(n) * 8) {
    return Status::Corruption(r->path() + ": holds " + std::to_string(r->info().data_bytes) +
                              " bytes, expected 8 per node (" + std::to_string(n) + " nodes)");
  }
  std::vector<bool> seen(static_cast<size_t>(n), false);
  std::vector<int64_t> ids;
  for (int64_t first = 0; first < n; first += kVerifyChunkNodes) {
    SKIFF_RETURN_IF_ERROR(
        ReadInts(*r, DType::kInt64, first, std::min(kVerifyChunkNodes, n - first), &ids));
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t old = ids[i];
      if (old < 0 || old >= n || seen[static_cast<size_t>(old)]) {
        return Status::Corruption(r->path() + ": node " + std::to_string(first + i) +
                                  " maps to ID " + std::to_string(old) +
                                  ", which is out of range or taken: not a permutation of [0, " +
                                  std::to_string(n) + ")");
      }
      seen[static_cast<size_t>(old)] = true;
    }
  }
  return Status::Ok();
}

// Each partition's feature extent is its rows, then zeros up to the next 4 KiB: boundaries moved
// within that padding pass Manifest::FromJson's extent check but shift rows between partitions, so
// a row lands in the padding (or padding is read as a row, and the next extent's last row lands
// in its padding). Caught unless the displaced row is all zeros.
Status Dataset::VerifyFeatureExtents() const {
  if (!manifest_.partitions) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* r, File(kFeaturesFile));
  const auto& b = manifest_.partitions->boundaries;
  const auto& extents = manifest_.feature_extent_offsets;
  std::vector<char> padding;
  // A shard holds its partitions' extents, each with its padding.
  const size_t q0 = is_shard() ? manifest_.shard->first_partition : 0;
  const size_t q1 = is_shard() ? manifest_.shard->end_partition : extents.size();
  for (size_t q = q0; q + 1 < extents.size() && q < q1; ++q) {
    const uint64_t end =
        extents[q] + static_cast<uint64_t>(b[q + 1] - b[q]) * manifest_.feature_row_bytes();
    padding.assign(extents[q + 1] - end, 0);
    SKIFF_RETURN_IF_ERROR(r->ReadAt(end, padding.size(), padding.data()));
    if (std::any_of(padding.begin(), padding.end(), [](char c) { return c != 0; })) {
      return Status::Corruption(r->path() + ": the padding after partition " + std::to_string(q) +
                                "'s rows (bytes " + std::to_string(end) + ".." +
                                std::to_string(extents[q + 1]) +
                                ") holds data: the partition boundaries in " + kManifestFile +
                                " do not match the feature layout");
    }
  }
  return Status::Ok();
}

Status Dataset::VerifySplits() const { return LoadSplits().status(); }

Status Dataset::VerifyFeatureValues() const {
  const int64_t dim = manifest_.feature_dim;
  if (dim == 0) return Status::Ok();
  constexpr int64_t kChunkValues = int64_t{1} << 24;
  const int64_t rows = std::max<int64_t>(1, kChunkValues / dim);
  std::vector<float> chunk;
  const int64_t hi = end_node();
  for (int64_t first = begin_node(); first < hi; first += rows) {
    const int64_t count = std::min(rows, hi - first);
    chunk.resize(static_cast<size_t>(count * dim));
    SKIFF_RETURN_IF_ERROR(ReadFeatureRows(first, count, chunk.data()));
  }
  return Status::Ok();
}

// --- Edge lookup and the edge split
// ----------------------------------------------------------------

namespace {
constexpr int64_t kLookupBlockNodes = int64_t{1} << 16;
constexpr int64_t kLookupMaxRowLoad = int64_t{1} << 20;
constexpr int64_t kVerifyChunkPairs = int64_t{1} << 20;

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return static_cast<size_t>(
        Mix64(static_cast<uint64_t>(p.first) * kGoldenGamma ^ static_cast<uint64_t>(p.second)));
  }
};
}  // namespace

Status EdgeLookup::LoadRow(int64_t u) {
  const Manifest& m = ds_.manifest();
  if (block_first_ < 0 || u < block_first_ ||
      u >= block_first_ + static_cast<int64_t>(offsets_block_.size()) - 1) {
    SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* offsets, ds_.File(kOffsetsFile));
    const int64_t first = u - u % kLookupBlockNodes;
    const int64_t count = std::min(kLookupBlockNodes, m.num_nodes - first);
    SKIFF_RETURN_IF_ERROR(ReadInts(*offsets, DType::kInt64, first, count + 1, &offsets_block_));
    block_first_ = first;
  }
  const auto at = static_cast<size_t>(u - block_first_);
  const int64_t begin = offsets_block_[at], end = offsets_block_[at + 1];
  if (begin < 0 || begin > end || end > m.num_edges) {
    return Status::Corruption(ds_.dir() + "/" + kOffsetsFile + ": the row of node " +
                              std::to_string(u) + " spans " + std::to_string(begin) + ".." +
                              std::to_string(end) +
                              ", outside [0, num_edges = " + std::to_string(m.num_edges) + "]");
  }
  row_node_ = u;
  row_begin_ = begin;
  row_end_ = end;
  row_loaded_ = end - begin <= kLookupMaxRowLoad;
  if (!row_loaded_) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* neighbors, ds_.File(kNeighborsFile));
  return ReadInts(*neighbors, m.neighbor_dtype, begin, end - begin, &row_);
}

Result<bool> EdgeLookup::Contains(int64_t u, int64_t v) {
  SKIFF_CHECK(u >= 0 && u < ds_.manifest().num_nodes);
  if (u != row_node_) SKIFF_RETURN_IF_ERROR(LoadRow(u));
  if (row_loaded_) return std::binary_search(row_.begin(), row_.end(), v);
  // A long row: binary search reading one neighbour at a time.
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* neighbors, ds_.File(kNeighborsFile));
  int64_t lo = row_begin_, hi = row_end_;
  std::vector<int64_t> one;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    SKIFF_RETURN_IF_ERROR(ReadInts(*neighbors, ds_.manifest().neighbor_dtype, mid, 1, &one));
    if (one[0] == v) return true;
    if (one[0] < v) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return false;
}

// Valid and test pairs are held in a hash set (by (min, max) when undirected); train pairs are
// streamed in chunks and looked up in the graph; non-edges checked against both.
Status Dataset::VerifyLinkSplit() const {
  if (!manifest_.link_split) return Status::Ok();
  const LinkSplitInfo& l = *manifest_.link_split;
  const bool undirected = manifest_.undirected;
  using Pair = std::pair<int64_t, int64_t>;
  auto key = [&](int64_t u, int64_t v) {
    return undirected ? Pair{std::min(u, v), std::max(u, v)} : Pair{u, v};
  };
  auto where = [&](const std::string& name, int64_t i, int64_t u, int64_t v) {
    return dir_ + "/" + name + ": pair " + std::to_string(i) + " (" + std::to_string(u) + ", " +
           std::to_string(v) + ")";
  };
  EdgeLookup graph(*this);
  auto in_graph = [&](int64_t u, int64_t v) -> Result<bool> {
    SKIFF_ASSIGN_OR_RETURN(bool found, graph.Contains(u, v));
    if (found || !undirected) return found;
    return graph.Contains(v, u);
  };

  std::unordered_map<Pair, const char*, PairHash> held_out;  // pair -> its file
  held_out.reserve(static_cast<size_t>(l.valid + l.test));
  for (const char* name : {kLinkValidFile, kLinkTestFile}) {
    SKIFF_ASSIGN_OR_RETURN(const auto pairs, LoadEdgePairs(name));
    for (size_t i = 0; i < pairs.size() / 2; ++i) {
      const int64_t u = pairs[2 * i], v = pairs[2 * i + 1];
      const auto at = static_cast<int64_t>(i);
      if (u == v) {
        return Status::Corruption(where(name, at, u, v) +
                                  " is a self-loop; self-loops are never held out");
      }
      auto [it, inserted] = held_out.emplace(key(u, v), name);
      if (!inserted && it->second != name) {
        return Status::Corruption(where(name, at, u, v) + " is also in " + it->second +
                                  "; the splits must be disjoint");
      }
      SKIFF_ASSIGN_OR_RETURN(const bool leaked, in_graph(u, v));
      if (leaked) {
        return Status::Corruption(where(name, at, u, v) + " is still an edge of " + kNeighborsFile +
                                  ": held-out edges must be removed from the message-passing "
                                  "graph (both directions when undirected)");
      }
    }
  }

  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* train, File(kLinkTrainFile));
  std::vector<int64_t> chunk;
  for (int64_t first = 0; first < l.train; first += kVerifyChunkPairs) {
    const int64_t count = std::min(kVerifyChunkPairs, l.train - first);
    SKIFF_RETURN_IF_ERROR(ReadInts(*train, DType::kInt64, 2 * first, 2 * count, &chunk));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t u = chunk[static_cast<size_t>(2 * i)],
                    v = chunk[static_cast<size_t>(2 * i + 1)];
      const int64_t at = first + i;
      if (u < 0 || u >= manifest_.num_nodes || v < 0 || v >= manifest_.num_nodes) {
        return Status::Corruption(where(kLinkTrainFile, at, u, v) +
                                  " has an endpoint outside [0, " +
                                  std::to_string(manifest_.num_nodes) + ")");
      }
      if (auto it = held_out.find(key(u, v)); it != held_out.end()) {
        return Status::Corruption(where(kLinkTrainFile, at, u, v) + " is also in " + it->second +
                                  "; the splits must be disjoint");
      }
      SKIFF_ASSIGN_OR_RETURN(const bool found, graph.Contains(u, v));
      if (!found) {
        return Status::Corruption(where(kLinkTrainFile, at, u, v) + " is not an edge of " +
                                  kNeighborsFile + ": training pairs stay in the graph");
      }
    }
  }

  for (const char* name : {kLinkValidNegFile, kLinkTestNegFile}) {
    SKIFF_ASSIGN_OR_RETURN(const auto pairs, LoadEdgePairs(name));
    std::unordered_set<Pair, PairHash> seen;
    seen.reserve(pairs.size() / 2);
    for (size_t i = 0; i < pairs.size() / 2; ++i) {
      const int64_t u = pairs[2 * i], v = pairs[2 * i + 1];
      const auto at = static_cast<int64_t>(i);
      if (u == v)
        return Status::Corruption(where(name, at, u, v) + " is a self-loop, not a non-edge");
      if (!seen.insert(key(u, v)).second) {
        return Status::Corruption(where(name, at, u, v) + " appears twice");
      }
      if (auto it = held_out.find(key(u, v)); it != held_out.end()) {
        return Status::Corruption(where(name, at, u, v) + " is a held-out edge of " + it->second +
                                  ", not a non-edge");
      }
      SKIFF_ASSIGN_OR_RETURN(const bool found, in_graph(u, v));
      if (found) {
        return Status::Corruption(where(name, at, u, v) + " is an edge of " + kNeighborsFile +
                                  ", not a non-edge");
      }
    }
  }
  for (const char* name : {kLinkValidCandFile, kLinkTestCandFile}) {
    SKIFF_RETURN_IF_ERROR(LoadCandidates(name).status());  // every ID in range
  }
  return Status::Ok();
}

Status Dataset::VerifyAll() const {
  for (const auto& [name, reader] : readers_) SKIFF_RETURN_IF_ERROR(reader->VerifyAll());
  return VerifyConsistency();
}

Status Dataset::VerifyConsistency() const {
  SKIFF_RETURN_IF_ERROR(LoadLabels().status());
  SKIFF_RETURN_IF_ERROR(VerifySplits());
  uint64_t edge_sum = 0;
  SKIFF_RETURN_IF_ERROR(VerifyGraph(&edge_sum));
  SKIFF_RETURN_IF_ERROR(VerifyFeatureExtents());
  SKIFF_RETURN_IF_ERROR(VerifyFeatureValues());
  SKIFF_RETURN_IF_ERROR(VerifyRelabelling());
  SKIFF_RETURN_IF_ERROR(VerifyEdgeBuckets(edge_sum));
  return VerifyLinkSplit();
}

}  // namespace skiff::format
