#include "skiff/convert/convert.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <tuple>
#include <vector>

#include "skiff/convert/csr_builder.h"
#include "skiff/convert/external_sort.h"
#include "skiff/convert/feature_values.h"
#include "skiff/convert/id_map_builder.h"
#include "skiff/convert/largest_component.h"
#include "skiff/convert/metis.h"
#include "skiff/convert/npz_graph.h"
#include "skiff/convert/ogb.h"
#include "skiff/enum_names.h"
#include "skiff/half.h"
#include "skiff/io/free_space.h"
#include "skiff/io/npy.h"
#include "skiff/io/path_status.h"
#include "skiff/log.h"
#include "skiff/process.h"
#include "skiff/progress.h"
#include "skiff/units.h"

namespace skiff::convert {
namespace fs = std::filesystem;

namespace {
constexpr EnumName<InputFormat> kInputFormats[] = {{InputFormat::kAuto, "auto"},
                                                   {InputFormat::kEdgeList, "edgelist"},
                                                   {InputFormat::kMetis, "metis"},
                                                   {InputFormat::kNpz, "npz"},
                                                   {InputFormat::kOgb, "ogb"}};
constexpr EnumName<IdMapMode> kIdMapModes[] = {
    {IdMapMode::kAuto, "auto"}, {IdMapMode::kAlways, "always"}, {IdMapMode::kNever, "never"}};
}  // namespace

const char* InputFormatName(InputFormat format) { return NameOf(kInputFormats, format); }

Result<InputFormat> ParseInputFormat(const std::string& name) {
  return ParseName(kInputFormats, "input format", name);
}

Result<IdMapMode> ParseIdMapMode(const std::string& name) {
  return ParseName(kIdMapModes, "--id-map mode", name);
}

namespace {
bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

Result<InputFormat> DetectInputFormat(const std::string& input) {
  std::error_code ec;
  SKIFF_RETURN_IF_ERROR(io::StatPath("input", input));
  if (fs::is_directory(input, ec)) {
    if (IsOgbDirectory(input)) return InputFormat::kOgb;
    return Status::InvalidArgument("input " + input +
                                   " is a directory without raw/; the only directory input is the "
                                   "OGB raw layout (raw/edge.csv.gz, ...)");
  }
  std::string name = input;
  if (EndsWith(name, ".gz")) name.resize(name.size() - 3);
  if (EndsWith(input, ".npz")) return InputFormat::kNpz;
  if (EndsWith(name, ".graph") || EndsWith(name, ".metis")) return InputFormat::kMetis;
  return InputFormat::kEdgeList;
}

namespace {

constexpr uint64_t kMinMemoryBytes = 1ull << 20;
// `--id-map=never` refuses IDs that would make a CSR with more than this many rows.
constexpr int64_t kMaxIdentityNodes = int64_t{1} << 36;
constexpr size_t kProgressEvery = 1 << 16;

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return fs::path(p).filename().string();
}

// State shared by the input-specific readers.
struct Job {
  Job(const ConvertOptions& o, format::DatasetWriter& w, uint64_t memory, ConvertSummary s)
      : opt(o), writer(w), memory_bytes(memory), summary(std::move(s)) {}
  const ConvertOptions& opt;
  format::DatasetWriter& writer;
  uint64_t memory_bytes;
  ConvertSummary summary;
  bool undirected = false;
  std::optional<std::vector<int32_t>> labels;
  std::optional<Splits> splits;
  bool features_written = false;
};

Result<std::unique_ptr<EdgeSorter>> MakeSorter(const Job& job, bool add_reverse,
                                               uint64_t memory_bytes) {
  EdgeSorterOptions so;
  so.memory_bytes = memory_bytes;
  so.spill_parent_dir = job.opt.tmp_dir.empty() ? job.writer.temp_dir() : job.opt.tmp_dir;
  so.add_reverse = add_reverse;
  so.drop_self_loops = !job.opt.keep_self_loops;
  so.drop_duplicates = !job.opt.keep_duplicates;
  return EdgeSorter::Create(so);
}

Status BuildCsr(Job& job, EdgeSorter& sorter, int64_t num_nodes) {
  if (num_nodes == 0) {
    return Status::InvalidArgument(job.opt.input +
                                   " holds no edges and no nodes (empty, or only comments and a "
                                   "header): nothing to convert");
  }
  // CSR offsets, neighbours, labels and at most every node in the splits (features come later,
  // and are checked by their writes): an ID of 2^32 under --id-map never is 49 GiB of this.
  const auto n = static_cast<uint64_t>(num_nodes);
  const uint64_t need = (n + 1) * 8 + sorter.stats().edges_added * 8 + n * 4 + n * 8;
  SKIFF_RETURN_IF_ERROR(io::CheckFreeSpace(job.writer.temp_dir(), need,
                                           "converting into " + job.opt.output + ": " +
                                               std::to_string(num_nodes) + " nodes (IDs up to " +
                                               std::to_string(num_nodes - 1) + ")"));
  SKIFF_RETURN_IF_ERROR(sorter.Finish());
  const uint64_t held = sorter.stats().edges_added;
  SKIFF_ASSIGN_OR_RETURN(CsrResult csr, WriteCsr(sorter, num_nodes, job.writer, held));
  const auto& st = sorter.stats();
  job.summary.num_nodes = num_nodes;
  job.summary.num_edges = csr.num_edges;
  job.summary.self_loops_dropped = st.self_loops_dropped;
  job.summary.duplicates_dropped = st.duplicates_dropped;
  job.summary.runs_spilled = st.runs_spilled;
  job.summary.bytes_spilled = st.bytes_spilled;
  return Status::Ok();
}

// --- Edge lists
// -----------------------------------------------------------------------------------

enum class DenseOutcome { kDense, kNotDense };

// The IDs the dense reading has seen: their largest and, when `track`, a bitmap of which occur
// (grown as IDs arrive, up to `limit` bits).
class DenseIds {
 public:
  DenseIds(bool track, int64_t limit) : track_(track), limit_(limit) {}

  void Note(int64_t v) {
    max_id_ = std::max(max_id_, v);
    if (!track_) return;
    const size_t word = static_cast<size_t>(v >> 6);
    if (word >= seen_.size()) {
      seen_.resize(std::min<size_t>(std::max(word + 1, seen_.size() * 2),
                                    static_cast<size_t>(limit_ / 64 + 1)));
    }
    seen_[word] |= uint64_t{1} << (v & 63);
  }
  int64_t max_id() const { return max_id_; }
  // How many distinct IDs were noted (when tracked).
  uint64_t Distinct() const {
    uint64_t distinct = 0;
    for (uint64_t w : seen_) distinct += static_cast<uint64_t>(std::popcount(w));
    return distinct;
  }

 private:
  const bool track_;
  const int64_t limit_;
  std::vector<uint64_t> seen_;  // bit v: ID v occurs
  int64_t max_id_ = -1;
};

// Parses `field`, at the reader's line, as a dense node ID below `limit` into *value. When it is
// not one: with `strict` an error naming the line; else false, after logging why IDs are mapped.
Result<bool> ParseDenseId(const EdgeListReader& reader, std::string_view field, bool strict,
                          int64_t limit, int64_t* value) {
  if (!ParseCanonicalId(field, value)) {
    if (strict) {
      return reader.ErrorAtLine("node ID \"" + std::string(field.substr(0, 60)) +
                                "\" is not a non-negative integer written without sign or "
                                "leading zeros; --id-map=never needs such integer IDs in [0, N) "
                                "(raw IDs are compared byte for byte; use --id-map=auto for "
                                "other IDs)");
    }
    LogInfo(reader.Where() + ": node ID \"" + std::string(field.substr(0, 60)) +
            "\" is not a non-negative integer written without sign or leading zeros; mapping "
            "IDs (idmap/)");
    return false;
  }
  if (*value >= limit) {
    if (strict) {
      return reader.ErrorAtLine("node ID " + std::to_string(*value) + " is too large for " +
                                "--id-map=never (the CSR would have that many rows); use "
                                "--id-map=auto");
    }
    LogInfo(reader.Where() + ": node ID " + std::to_string(*value) +
            " is too large to be a dense ID; mapping IDs (idmap/)");
    return false;
  }
  return true;
}

// Reads the edge list taking integer IDs as dense node IDs. In auto mode, returns kNotDense as
// soon as an ID is not a non-negative integer or too large to track, or at the end when the IDs
// do not cover [0, max] exactly; in never mode those are errors (or, for gaps, isolated nodes).
Result<DenseOutcome> ReadEdgeListDense(Job& job, EdgeSorter& sorter, uint64_t bitmap_bytes,
                                       int64_t* num_nodes) {
  const bool strict = job.opt.id_map == IdMapMode::kNever;
  SKIFF_ASSIGN_OR_RETURN(auto reader, EdgeListReader::Open(job.opt.input, job.opt.edge_list));
  Progress progress("read " + BaseName(job.opt.input), reader->lines().file_bytes(), "B");
  const int64_t limit =
      strict ? kMaxIdentityNodes : static_cast<int64_t>(std::max<uint64_t>(bitmap_bytes, 4096) * 8);
  DenseIds ids(/*track=*/!strict, limit);
  uint64_t edges = 0;
  std::string_view s, d;
  while (reader->Next(&s, &d)) {
    int64_t src = 0, dst = 0;
    for (auto [field, value] : {std::pair{s, &src}, std::pair{d, &dst}}) {
      SKIFF_ASSIGN_OR_RETURN(const bool dense, ParseDenseId(*reader, field, strict, limit, value));
      if (!dense) return DenseOutcome::kNotDense;
    }
    ids.Note(src);
    ids.Note(dst);
    SKIFF_RETURN_IF_ERROR(sorter.Add(src, dst));
    if (++edges % kProgressEvery == 0) progress.Set(reader->lines().file_bytes_read());
  }
  SKIFF_RETURN_IF_ERROR(reader->status());
  progress.Set(reader->lines().file_bytes_read());
  progress.Finish();
  job.summary.input_edges = edges;
  const uint64_t distinct = strict ? 0 : ids.Distinct();
  if (!strict && distinct != static_cast<uint64_t>(ids.max_id() + 1)) {
    LogInfo("node IDs are integers but not dense: " + std::to_string(distinct) +
            " distinct IDs with the largest " + std::to_string(ids.max_id()) +
            "; mapping IDs (idmap/)");
    return DenseOutcome::kNotDense;
  }
  *num_nodes = ids.max_id() + 1;
  return DenseOutcome::kDense;
}

// Reads the edge list once, giving its IDs dense numbers by sorting (IdMapBuilder: runs spilled
// within the budget, merged, bulk-loaded into idmap/), then replays the mapped edges into the
// sorter. With `detect_dense`, IDs that turn out to be the integers [0, N) map to themselves and
// no map is written (the dense path's result, for input that cannot be read twice).
Status ConvertEdgeListMapped(Job& job, bool detect_dense) {
  IdMapBuilderOptions bo;
  bo.memory_bytes = job.memory_bytes * 9 / 10;
  bo.spill_parent_dir = job.opt.tmp_dir.empty() ? job.writer.temp_dir() : job.opt.tmp_dir;
  bo.detect_dense_integers = detect_dense;
  bo.max_identity_id = static_cast<int64_t>(std::max<uint64_t>(job.memory_bytes / 10, 4096) * 8);
  SKIFF_ASSIGN_OR_RETURN(auto builder, IdMapBuilder::Create(bo));
  SKIFF_ASSIGN_OR_RETURN(auto reader, EdgeListReader::Open(job.opt.input, job.opt.edge_list));
  Progress progress("read " + BaseName(job.opt.input) + " (mapping IDs)",
                    reader->lines().file_bytes(), "B");
  uint64_t edges = 0;
  std::string_view s, d;
  while (reader->Next(&s, &d)) {
    if (Status st = builder->Add(s, d); !st.ok()) return st.WithContext(reader->Where());
    if (++edges % kProgressEvery == 0) progress.Set(reader->lines().file_bytes_read());
  }
  SKIFF_RETURN_IF_ERROR(reader->status());
  progress.Set(reader->lines().file_bytes_read());
  progress.Finish();
  reader.reset();
  SKIFF_RETURN_IF_ERROR(builder->Finish(job.writer.temp_dir() + "/" + format::kIdMapDir));
  const int64_t num_nodes = builder->num_nodes();
  // The replay's local -> dense table and the sorter share the mapping pass's allowance.
  const uint64_t allowance = job.memory_bytes * 9 / 10;
  const uint64_t sorter_bytes =
      std::max(job.memory_bytes / 10, allowance - std::min(allowance, builder->replay_bytes()));
  SKIFF_ASSIGN_OR_RETURN(auto sorter, MakeSorter(job, job.undirected, sorter_bytes));
  SKIFF_RETURN_IF_ERROR(
      builder->Replay([&](int64_t src, int64_t dst) { return sorter->Add(src, dst); }));
  job.summary.input_edges = edges;
  job.summary.id_map_used = !builder->identity();
  job.summary.id_runs_spilled = builder->stats().runs_spilled;
  job.summary.id_bytes_spilled = builder->stats().bytes_spilled;
  job.writer.manifest().has_id_map = !builder->identity();
  builder.reset();
  return BuildCsr(job, *sorter, num_nodes);
}

// Classes are the labels 0 .. max: a stray large label silently makes the model's output that
// wide. Says so when most of those classes never occur.
void WarnSparseClasses(const std::vector<int32_t>& labels, int64_t num_classes,
                       const std::string& input) {
  if (num_classes <= 64) return;
  std::vector<bool> seen(static_cast<size_t>(num_classes), false);
  int64_t distinct = 0;
  for (const int32_t l : labels) {
    if (l >= 0 && !seen[static_cast<size_t>(l)]) {
      seen[static_cast<size_t>(l)] = true;
      ++distinct;
    }
  }
  if (distinct * 2 >= num_classes) return;
  LogWarning(
      input + ": labels go up to " + std::to_string(num_classes - 1) + " but only " +
      std::to_string(distinct) + " distinct values occur: the dataset gets " +
      std::to_string(num_classes) +
      " classes (the model's output width); relabel the classes 0..k-1 if that is not meant");
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status ConvertEdgeList(Job& job) {
  job.undirected = job.opt.direction == Direction::kUndirected;
  // A regular file can be read twice: try the fast dense path first, and map IDs only if they are
  // not dense. A pipe is read once, by the mapping pass, which also recognises dense integers.
  const bool regular = IsRegularFile(job.opt.input);
  if (job.opt.id_map == IdMapMode::kNever || (job.opt.id_map == IdMapMode::kAuto && regular)) {
    int64_t num_nodes = 0;
    SKIFF_ASSIGN_OR_RETURN(auto sorter, MakeSorter(job, job.undirected, job.memory_bytes * 8 / 10));
    SKIFF_ASSIGN_OR_RETURN(DenseOutcome outcome,
                           ReadEdgeListDense(job, *sorter, job.memory_bytes / 10, &num_nodes));
    if (outcome == DenseOutcome::kDense) return BuildCsr(job, *sorter, num_nodes);
  }
  return ConvertEdgeListMapped(job, job.opt.id_map == IdMapMode::kAuto && !regular);
}

// --- METIS
// ----------------------------------------------------------------------------------------

Status ConvertMetis(Job& job) {
  job.undirected = job.opt.direction != Direction::kDirected;
  SKIFF_ASSIGN_OR_RETURN(auto reader, MetisReader::Open(job.opt.input));
  const MetisHeader& h = reader->header();
  // METIS lists each undirected edge at both ends, but a file that does not is still stored as
  // undirected: adding the reverse of every entry (duplicates then dropped) makes the adjacency
  // symmetric whatever the file holds, and changes nothing for a well-formed one. With
  // --duplicates keep that would double every edge, so the entries are taken as they are.
  const bool symmetrize = job.undirected && !job.opt.keep_duplicates;
  SKIFF_ASSIGN_OR_RETURN(auto sorter, MakeSorter(job, symmetrize, job.memory_bytes * 9 / 10));
  Progress progress("read " + BaseName(job.opt.input), static_cast<uint64_t>(h.num_nodes),
                    "vertices");
  int64_t vertex = 0;
  std::vector<int64_t> neighbors;
  uint64_t entries = 0;
  while (reader->NextVertex(&vertex, &neighbors)) {
    for (int64_t nbr : neighbors) SKIFF_RETURN_IF_ERROR(sorter->Add(vertex, nbr));
    entries += neighbors.size();
    if (vertex % kProgressEvery == 0) progress.Set(static_cast<uint64_t>(vertex));
  }
  SKIFF_RETURN_IF_ERROR(reader->status());
  progress.Set(static_cast<uint64_t>(h.num_nodes));
  progress.Finish();
  job.summary.input_edges = entries;
  SKIFF_RETURN_IF_ERROR(BuildCsr(job, *sorter, h.num_nodes));
  const auto stored = static_cast<uint64_t>(job.summary.num_edges);
  if (symmetrize && stored > entries) {
    LogWarning(job.opt.input + " is not symmetric: at least " + std::to_string(stored - entries) +
               " adjacency entries are listed at one end only (METIS lists each edge at both "
               "ends); they are stored both ways. Check the file, or convert with --directed "
               "to keep its entries as they are");
  }
  return Status::Ok();
}

// --- Features and labels from .npy / OGB
// ----------------------------------------------------------

// Streams rows of `dim` floats from `next_rows` (read from `source`) into features.bin in the
// chosen dtype, checking every value (CheckFeatureValues).
template <typename NextRows>
Status WriteFeatureRows(Job& job, const std::string& source, int64_t num_rows, int64_t dim,
                        NextRows next_rows) {
  SKIFF_ASSIGN_OR_RETURN(auto file, job.writer.CreateFile(format::kFeaturesFile));
  const bool half = job.opt.feature_dtype == format::DType::kFloat16;
  const int64_t chunk_rows = std::max<int64_t>(1, (8 << 20) / std::max<int64_t>(dim * 4, 1));
  std::vector<float> rows(static_cast<size_t>(chunk_rows * dim));
  std::vector<uint16_t> halves(half ? rows.size() : 0);
  Progress progress("write features", static_cast<uint64_t>(num_rows), "rows");
  for (int64_t done = 0; done < num_rows;) {
    const int64_t n = std::min(chunk_rows, num_rows - done);
    SKIFF_RETURN_IF_ERROR(next_rows(n, rows.data()));
    SKIFF_RETURN_IF_ERROR(
        CheckFeatureValues(rows.data(), n, dim, done, job.opt.feature_dtype, source));
    const size_t count = static_cast<size_t>(n * dim);
    if (half) {
      for (size_t i = 0; i < count; ++i) halves[i] = FloatToHalf(rows[i]);
      SKIFF_RETURN_IF_ERROR(file->Append(halves.data(), count * 2));
    } else {
      SKIFF_RETURN_IF_ERROR(file->Append(rows.data(), count * 4));
    }
    done += n;
    progress.Set(static_cast<uint64_t>(done));
  }
  progress.Finish();
  SKIFF_RETURN_IF_ERROR(job.writer.FinishFile(*file));
  job.writer.manifest().feature_dim = dim;
  job.writer.manifest().feature_dtype = job.opt.feature_dtype;
  job.summary.feature_dim = dim;
  job.features_written = true;
  return Status::Ok();
}

Status ReadNpyFeatures(Job& job, int64_t num_nodes) {
  const std::string& path = job.opt.features_npy;
  SKIFF_ASSIGN_OR_RETURN(auto reader, io::NpyReader::OpenFile(path));
  const auto& shape = reader->header().shape;
  if (shape.empty() || shape.size() > 2) {
    return Status::InvalidArgument(path + ": features must be a 1-D or 2-D array [N, D], found " +
                                   std::to_string(shape.size()) + " dimensions");
  }
  if (shape[0] != num_nodes) {
    return Status::InvalidArgument(path + ": " + std::to_string(shape[0]) +
                                   " feature rows, expected one per node (" +
                                   std::to_string(num_nodes) + " nodes in " + job.opt.input + ")");
  }
  const int64_t dim = shape.size() == 2 ? shape[1] : 1;
  return WriteFeatureRows(job, path, num_nodes, dim,
                          [&](int64_t n, float* dst) { return reader->ReadFloat(n * dim, dst); });
}

Result<std::vector<int32_t>> ReadNpyLabels(const std::string& path, int64_t num_nodes,
                                           const std::string& input) {
  SKIFF_ASSIGN_OR_RETURN(auto reader, io::NpyReader::OpenFile(path));
  const auto& shape = reader->header().shape;
  if (shape.empty() || shape.size() > 2 || (shape.size() == 2 && shape[1] != 1)) {
    return Status::InvalidArgument(path + ": labels must be a 1-D integer array [N]");
  }
  if (shape[0] != num_nodes) {
    return Status::InvalidArgument(path + ": " + std::to_string(shape[0]) +
                                   " labels, expected one per node (" + std::to_string(num_nodes) +
                                   " nodes in " + input + ")");
  }
  std::vector<int32_t> labels(static_cast<size_t>(num_nodes));
  std::vector<int64_t> chunk(1 << 16);
  for (int64_t done = 0; done < num_nodes;) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(chunk.size()), num_nodes - done);
    SKIFF_RETURN_IF_ERROR(reader->ReadInt64(n, chunk.data()));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = chunk[static_cast<size_t>(i)];
      if (v < -1 || v >= format::kMaxClasses) {
        return Status::InvalidArgument(path + ": label of node " + std::to_string(done + i) +
                                       " is " + std::to_string(v) +
                                       "; expected a class number in [0, 2^24), or -1 for "
                                       "unlabelled");
      }
      labels[static_cast<size_t>(done + i)] = static_cast<int32_t>(v);
    }
    done += n;
  }
  return labels;
}

Status AttachNpyInputs(Job& job) {
  if (job.opt.features_npy.empty() && job.opt.labels_npy.empty()) return Status::Ok();
  if (job.summary.id_map_used) {
    return Status::InvalidArgument(
        "--features/--labels give row i to node i, so they need node IDs that are already dense "
        "integers [0, N); the IDs of " +
        job.opt.input + " were mapped through idmap/ (pass --id-map=never if they are integers)");
  }
  if (!job.opt.features_npy.empty())
    SKIFF_RETURN_IF_ERROR(ReadNpyFeatures(job, job.summary.num_nodes));
  if (!job.opt.labels_npy.empty()) {
    SKIFF_ASSIGN_OR_RETURN(job.labels,
                           ReadNpyLabels(job.opt.labels_npy, job.summary.num_nodes, job.opt.input));
  }
  return Status::Ok();
}

// --- OGB
// ------------------------------------------------------------------------------------------

// The OGB node features (node-feat.csv) into features.bin, counting the rows first when the
// layout does not give the node count (*num_nodes < 0; set from the rows).
Status ConvertOgbFeatures(Job& job, const std::string& path, int64_t* num_nodes) {
  SKIFF_ASSIGN_OR_RETURN(auto feats, CsvFloatRowReader::Open(path));
  if (*num_nodes < 0) {
    // Count the rows first: features.bin is written knowing N.
    SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
    std::string_view line;
    int64_t rows = 0;
    while (lines->Next(&line)) ++rows;
    SKIFF_RETURN_IF_ERROR(lines->status());
    *num_nodes = rows;
  }
  const int64_t n_nodes = *num_nodes;
  const int64_t dim = feats->dim();
  SKIFF_RETURN_IF_ERROR(WriteFeatureRows(job, path, n_nodes, dim, [&](int64_t n, float* dst) {
    for (int64_t r = 0; r < n; ++r) {
      if (!feats->NextRow(dst + r * dim)) {
        SKIFF_RETURN_IF_ERROR(feats->status());
        return Status::Corruption(path + ": " + std::to_string(feats->rows_read()) +
                                  " feature rows, expected one per node (" +
                                  std::to_string(n_nodes) + ")");
      }
    }
    return Status::Ok();
  }));
  std::vector<float> extra(static_cast<size_t>(std::max<int64_t>(dim, 1)));
  if (feats->NextRow(extra.data())) {
    return Status::Corruption(feats->lines().Where() + ": more feature rows than the " +
                              std::to_string(n_nodes) + " nodes");
  }
  return feats->status();
}

// The OGB edge list (edge.csv: two columns of dense IDs) into the sorter; returns the largest ID.
Result<int64_t> ReadOgbEdges(Job& job, const std::string& path, int64_t num_nodes,
                             EdgeSorter& sorter) {
  EdgeListOptions elo;
  elo.header = HeaderMode::kNo;
  elo.extra_columns_are_errors = true;
  SKIFF_ASSIGN_OR_RETURN(auto reader, EdgeListReader::Open(path, elo));
  Progress progress("read " + BaseName(path), reader->lines().file_bytes(), "B");
  std::string_view s, d;
  int64_t max_id = -1;
  uint64_t edges = 0;
  while (reader->Next(&s, &d)) {
    int64_t src = 0, dst = 0;
    for (auto [field, value] : {std::pair{s, &src}, std::pair{d, &dst}}) {
      if (!ParseInt64(field, value) || *value < 0) {
        return reader->ErrorAtLine("node ID \"" + std::string(field.substr(0, 60)) +
                                   "\" is not a non-negative integer");
      }
      if (num_nodes >= 0 && *value >= num_nodes) {
        return reader->ErrorAtLine("node ID " + std::to_string(*value) + " is out of range [0, " +
                                   std::to_string(num_nodes) + ")");
      }
      max_id = std::max(max_id, *value);
    }
    SKIFF_RETURN_IF_ERROR(sorter.Add(src, dst));
    if (++edges % kProgressEvery == 0) progress.Set(reader->lines().file_bytes_read());
  }
  SKIFF_RETURN_IF_ERROR(reader->status());
  progress.Finish();
  job.summary.input_edges = edges;
  return max_id;
}

Status ConvertOgb(Job& job) {
  job.undirected = job.opt.direction == Direction::kUndirected;
  SKIFF_ASSIGN_OR_RETURN(OgbLayout layout, FindOgbLayout(job.opt.input, job.opt.ogb_split));
  int64_t num_nodes = -1;
  if (!layout.num_nodes_file.empty()) {
    SKIFF_ASSIGN_OR_RETURN(num_nodes, ReadOgbNumNodes(layout.num_nodes_file));
  }
  if (!layout.node_feat_file.empty()) {
    SKIFF_RETURN_IF_ERROR(ConvertOgbFeatures(job, layout.node_feat_file, &num_nodes));
  }
  SKIFF_ASSIGN_OR_RETURN(auto sorter, MakeSorter(job, job.undirected, job.memory_bytes * 8 / 10));
  SKIFF_ASSIGN_OR_RETURN(const int64_t max_id,
                         ReadOgbEdges(job, layout.edge_file, num_nodes, *sorter));
  if (num_nodes < 0) num_nodes = max_id + 1;
  SKIFF_RETURN_IF_ERROR(BuildCsr(job, *sorter, num_nodes));
  sorter.reset();

  if (!layout.node_label_file.empty()) {
    SKIFF_ASSIGN_OR_RETURN(job.labels, ReadOgbLabels(layout.node_label_file, num_nodes));
  }
  if (!layout.split_name.empty() && !layout.link) {  // a link split is applied last
    Splits splits;
    SKIFF_ASSIGN_OR_RETURN(splits.train, ReadOgbIndexFile(layout.train_file, num_nodes));
    SKIFF_ASSIGN_OR_RETURN(splits.valid, ReadOgbIndexFile(layout.valid_file, num_nodes));
    SKIFF_ASSIGN_OR_RETURN(splits.test, ReadOgbIndexFile(layout.test_file, num_nodes));
    SKIFF_RETURN_IF_ERROR(
        CheckDisjoint(splits, layout.train_file, layout.valid_file, layout.test_file));
    job.splits = std::move(splits);
  }
  return Status::Ok();
}

// --- Common tail
// ----------------------------------------------------------------------------------

Status FinishDataset(Job& job) {
  auto& m = job.writer.manifest();
  const int64_t n = job.summary.num_nodes;
  if (!job.features_written) {
    SKIFF_RETURN_IF_ERROR(job.writer.WriteFile(format::kFeaturesFile, nullptr, 0));
    m.feature_dim = 0;
    m.feature_dtype = job.opt.feature_dtype;
  }
  Splits splits;
  job.summary.splits_from_input = job.splits.has_value();
  if (job.labels) {
    const auto& labels = *job.labels;
    int64_t max_label = -1;
    for (const int32_t l : labels) max_label = std::max<int64_t>(max_label, l);
    m.num_classes = max_label + 1;
    WarnSparseClasses(labels, m.num_classes, job.opt.input);
    SKIFF_RETURN_IF_ERROR(
        job.writer.WriteFile(format::kLabelsFile, labels.data(), labels.size() * sizeof(int32_t)));
    if (job.splits) {
      splits = std::move(*job.splits);
    } else {
      SKIFF_ASSIGN_OR_RETURN(splits, MakeSplits(job.opt.split, labels, m.num_classes));
    }
  } else {
    m.num_classes = 0;
    SKIFF_ASSIGN_OR_RETURN(auto file, job.writer.CreateFile(format::kLabelsFile));
    const std::vector<int32_t> unlabelled(1 << 16, -1);
    for (int64_t done = 0; done < n;) {
      const int64_t k = std::min<int64_t>(static_cast<int64_t>(unlabelled.size()), n - done);
      SKIFF_RETURN_IF_ERROR(file->Append(unlabelled.data(), static_cast<size_t>(k) * 4));
      done += k;
    }
    SKIFF_RETURN_IF_ERROR(job.writer.FinishFile(*file));
    if (job.splits) splits = std::move(*job.splits);  // splits without labels: kept as given
  }
  SKIFF_RETURN_IF_ERROR(WriteSplits(job.writer, splits));
  m.name = BaseName(job.opt.output);
  m.source =
      "skiff convert " + BaseName(job.opt.input) + " (" + InputFormatName(job.summary.format) + ")";
  m.undirected = job.undirected;
  job.summary.num_classes = m.num_classes;
  job.summary.train_count = m.train_count;
  job.summary.valid_count = m.valid_count;
  job.summary.test_count = m.test_count;
  return job.writer.Commit();
}

Result<ConvertSummary> ConvertNpz(const ConvertOptions& opt, ConvertSummary summary) {
  if (!opt.features_npy.empty() || !opt.labels_npy.empty()) {
    return Status::InvalidArgument(opt.input +
                                   ": --features/--labels apply to edge lists and METIS graphs; a "
                                   ".npz archive carries its own attributes and labels");
  }
  NpzGraphOptions npz;
  npz.input = opt.input;
  npz.output = opt.output;
  npz.overwrite = opt.overwrite;
  npz.undirected = opt.direction == Direction::kUndirected;
  npz.keep_self_loops = opt.keep_self_loops;
  npz.feature_dtype = opt.feature_dtype;
  npz.split = opt.split;
  SKIFF_RETURN_IF_ERROR(ConvertNpzGraph(npz));
  SKIFF_ASSIGN_OR_RETURN(auto entries, io::ListNpzEntries(opt.input));
  for (const std::string& name : entries) {
    summary.splits_from_input |= name == "idx_train" || name == "idx_val" || name == "idx_test";
  }
  SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(opt.output));
  const auto& m = ds->manifest();
  summary.num_nodes = m.num_nodes;
  summary.num_edges = m.num_edges;
  summary.input_edges = static_cast<uint64_t>(m.num_edges);
  summary.feature_dim = m.feature_dim;
  summary.num_classes = m.num_classes;
  summary.train_count = m.train_count;
  summary.valid_count = m.valid_count;
  summary.test_count = m.test_count;
  return summary;
}

// The whole graph into options.output (npz archives through ConvertNpzGraph).
Result<ConvertSummary> ConvertWhole(const ConvertOptions& opt, ConvertSummary summary,
                                    uint64_t memory) {
  if (summary.format == InputFormat::kNpz) return ConvertNpz(opt, summary);
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
  Job job{opt, *writer, memory, summary};
  Status st;
  switch (summary.format) {
    case InputFormat::kEdgeList:
      st = ConvertEdgeList(job);
      break;
    case InputFormat::kMetis:
      st = ConvertMetis(job);
      break;
    case InputFormat::kOgb:
      st = ConvertOgb(job);
      break;
    default:
      SKIFF_CHECK_MSG(false, "unhandled input format");
  }
  if (st.ok() && summary.format != InputFormat::kOgb) st = AttachNpyInputs(job);
  if (st.ok()) st = FinishDataset(job);
  if (!st.ok()) return st;  // the writer's destructor removes its temporary directory
  return job.summary;
}

// --largest-component. Decision: convert the whole graph as usual into whole/ inside the output's
// temporary directory, then rewrite it there with the component only (WriteLargestComponent),
// because that is one step after every reader, whatever order each writes its files in; the cost
// is writing the dataset twice. whole/ is removed before the commit, and with the temporary
// directory on any failure.
Result<ConvertSummary> ConvertLargestComponent(const ConvertOptions& opt, ConvertSummary summary,
                                               uint64_t memory) {
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
  const std::string whole_dir = writer->temp_dir() + "/whole";
  if (::mkdir(whole_dir.c_str(), 0755) != 0) {
    return Status::FromErrno(errno, "create directory " + whole_dir);
  }
  ConvertOptions whole = opt;
  whole.output = whole_dir + "/" + BaseName(opt.output);  // the manifest's name is the output's
  whole.overwrite = false;
  whole.largest_component = false;
  SKIFF_ASSIGN_OR_RETURN(summary, ConvertWhole(whole, summary, memory));
  {
    SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(whole.output));
    ComponentOptions co;
    co.memory_bytes = memory;
    co.keep_splits = summary.splits_from_input;
    co.split = opt.split;
    SKIFF_ASSIGN_OR_RETURN(ComponentSummary c, WriteLargestComponent(*ds, *writer, co));
    auto& m = writer->manifest();
    m.name = ds->manifest().name;
    m.source = ds->manifest().source + ", largest component";
    summary.num_nodes = c.nodes_kept;
    summary.num_edges = c.edges_kept;
    summary.num_components = c.num_components;
    summary.component_nodes_dropped = c.nodes_dropped;
    summary.component_edges_dropped = c.edges_dropped;
    summary.train_count = m.train_count;
    summary.valid_count = m.valid_count;
    summary.test_count = m.test_count;
  }
  std::error_code ec;
  fs::remove_all(whole_dir, ec);
  if (ec) return Status::IOError("remove " + whole_dir + ": " + ec.message());
  SKIFF_RETURN_IF_ERROR(writer->Commit());
  return summary;
}

// --split-edges, applied last: the dataset without it (the whole graph, or its largest component)
// is written into unsplit/ inside the output's temporary directory, as ConvertLargestComponent
// does, and rewritten from there with the held-out edges.
// The dataset `opt` asks for, without an edge split (the whole graph, or its largest component),
// written into unsplit/ inside `writer`'s temporary directory; returns its path. The caller
// rewrites it into `writer` with a split, then removes it (RemoveUnsplit).
Result<std::string> WriteUnsplit(const ConvertOptions& opt, format::DatasetWriter& writer,
                                 uint64_t memory, ConvertSummary* summary) {
  const std::string unsplit_dir = writer.temp_dir() + "/unsplit";
  if (::mkdir(unsplit_dir.c_str(), 0755) != 0) {
    return Status::FromErrno(errno, "create directory " + unsplit_dir);
  }
  ConvertOptions unsplit = opt;
  unsplit.output = unsplit_dir + "/" + BaseName(opt.output);  // the manifest's name is the output's
  unsplit.overwrite = false;
  unsplit.edge_split.reset();
  SKIFF_ASSIGN_OR_RETURN(*summary, unsplit.largest_component
                                       ? ConvertLargestComponent(unsplit, *summary, memory)
                                       : ConvertWhole(unsplit, *summary, memory));
  return unsplit.output;
}

Status RemoveUnsplit(const std::string& unsplit_output) {
  const std::string dir = fs::path(unsplit_output).parent_path().string();
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return Status::IOError("remove " + dir + ": " + ec.message());
  return Status::Ok();
}

Result<ConvertSummary> ConvertThenSplitEdges(const ConvertOptions& opt, ConvertSummary summary,
                                             uint64_t memory) {
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
  SKIFF_ASSIGN_OR_RETURN(const std::string unsplit, WriteUnsplit(opt, *writer, memory, &summary));
  {
    SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(unsplit));
    if (opt.edge_split->candidates > 0 && ds->manifest().undirected) {
      // Named here: WriteEdgeSplit would name the unsplit copy in the temporary directory.
      return Status::InvalidArgument(
          opt.input +
          " converts to an undirected dataset: --split-candidates needs a directed one (an "
          "undirected pair is stored as (min, max), which loses the endpoint the candidates "
          "replace; docs/FORMAT.md)");
    }
    SKIFF_ASSIGN_OR_RETURN(EdgeSplitSummary split, WriteEdgeSplit(*ds, *writer, *opt.edge_split));
    writer->manifest().source += ", edge split";
    summary.num_edges = split.edges_after;
    summary.link_split = split.split;
  }
  SKIFF_RETURN_IF_ERROR(RemoveUnsplit(unsplit));
  SKIFF_RETURN_IF_ERROR(writer->Commit());
  return summary;
}

// An OGB link-prediction layout's own edge split (split/<name>/*.npz), applied last as
// ConvertThenSplitEdges applies --split-edges: the dataset is written without it into unsplit/,
// then rewritten with the given pairs (WriteGivenEdgeSplit).
Result<GivenEdgeSplit> ReadOgbEdgeSplit(const OgbLayout& layout, const format::Manifest& m) {
  GivenEdgeSplit given;
  given.origin = layout.root + "/split/" + layout.split_name;
  for (const auto& [file, pairs, negatives, candidates] :
       {std::tuple{&layout.train_file, &given.train, static_cast<std::vector<int64_t>*>(nullptr),
                   static_cast<std::vector<int64_t>*>(nullptr)},
        std::tuple{&layout.valid_file, &given.valid, &given.valid_neg, &given.valid_cand},
        std::tuple{&layout.test_file, &given.test, &given.test_neg, &given.test_cand}}) {
    SKIFF_ASSIGN_OR_RETURN(OgbEdgeSplitFile split,
                           ReadOgbEdgeSplitFile(*file, m.num_nodes, !m.undirected));
    *pairs = std::move(split.pairs);
    if (negatives != nullptr) *negatives = std::move(split.negatives);
    if (split.negatives_per_positive == 0) continue;
    if (m.undirected) {
      LogWarning(*file + ": target_node_neg (" + std::to_string(split.negatives_per_positive) +
                 " candidates per positive) is not imported into an undirected dataset (its "
                 "pairs are stored as (min, max)): MRR ranks each positive among "
                 "--eval-negatives candidates drawn uniformly instead");
    } else if (candidates != nullptr) {
      if (given.candidates != 0 && given.candidates != split.negatives_per_positive) {
        return Status::Corruption(
            *file + ": target_node_neg has " + std::to_string(split.negatives_per_positive) +
            " candidates per positive, valid.npz " + std::to_string(given.candidates));
      }
      given.candidates = split.negatives_per_positive;
      *candidates = std::move(split.candidates);
    }
  }
  if (given.candidates > 0 && (given.valid_cand.empty() != given.valid.empty() ||
                               given.test_cand.empty() != given.test.empty())) {
    return Status::Corruption(given.origin +
                              ": target_node_neg is in one of valid.npz and test.npz only");
  }
  return given;
}

void LogGivenSplit(const GivenSplitReport& r, const std::string& origin) {
  const std::pair<int64_t, const char*> dropped[] = {
      {r.self_loops, "self-loop positives dropped"},
      {r.repeated, "repeated positives dropped"},
      {r.train_also_held_out, "train pairs dropped that are also valid or test pairs"},
      {r.train_not_in_graph, "train pairs dropped that are no edge of the graph"},
      {r.negatives_dropped, "negatives dropped (self-loops, repeats, positives or edges)"},
      {r.graph_edges_removed, "stored edges of valid and test pairs removed from the graph"}};
  for (const auto& [count, what] : dropped) {
    if (count > 0) LogInfo(origin + ": " + std::to_string(count) + " " + what);
  }
}

Result<ConvertSummary> ConvertThenGivenSplit(const ConvertOptions& opt, ConvertSummary summary,
                                             uint64_t memory, const OgbLayout& layout) {
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
  SKIFF_ASSIGN_OR_RETURN(const std::string unsplit, WriteUnsplit(opt, *writer, memory, &summary));
  {
    SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(unsplit));
    SKIFF_ASSIGN_OR_RETURN(GivenEdgeSplit given, ReadOgbEdgeSplit(layout, ds->manifest()));
    const std::string origin = given.origin;
    GivenSplitReport report;
    SKIFF_ASSIGN_OR_RETURN(EdgeSplitSummary split,
                           WriteGivenEdgeSplit(*ds, *writer, std::move(given), &report));
    LogGivenSplit(report, origin);
    summary.num_edges = split.edges_after;
    summary.link_split = split.split;
  }
  SKIFF_RETURN_IF_ERROR(RemoveUnsplit(unsplit));
  SKIFF_RETURN_IF_ERROR(writer->Commit());
  return summary;
}

// Options that only some input formats take are refused for the others, rather than ignored.
Status CheckFormatOptions(const ConvertOptions& opt, InputFormat format) {
  const std::string name = InputFormatName(format);
  if (!opt.features_npy.empty() || !opt.labels_npy.empty()) {
    if (format == InputFormat::kOgb) {
      return Status::InvalidArgument(opt.input +
                                     ": --features/--labels apply to edge lists and METIS graphs; "
                                     "the OGB layout carries raw/node-feat.csv.gz and "
                                     "raw/node-label.csv.gz");
    }
    if (format == InputFormat::kNpz) {
      return Status::InvalidArgument(opt.input +
                                     ": --features/--labels apply to edge lists and METIS graphs; "
                                     "an .npz archive carries its own features and labels");
    }
  }
  if (!opt.ogb_split.empty() && format != InputFormat::kOgb) {
    return Status::InvalidArgument(opt.input + ": --ogb-split applies to the OGB layout, not to " +
                                   name + " input");
  }
  if (opt.edge_list.header != HeaderMode::kAuto && format != InputFormat::kEdgeList) {
    return Status::InvalidArgument(
        opt.input + ": --header/--no-header apply to edge lists, not to " + name + " input");
  }
  return Status::Ok();
}
}  // namespace

Result<ConvertSummary> ConvertGraph(const ConvertOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  ConvertSummary summary;
  summary.format = opt.format;
  if (summary.format == InputFormat::kAuto) {
    SKIFF_ASSIGN_OR_RETURN(summary.format, DetectInputFormat(opt.input));
  } else {
    SKIFF_RETURN_IF_ERROR(io::StatPath("input", opt.input));
  }
  uint64_t memory = opt.memory_bytes != 0 ? opt.memory_bytes : PhysicalMemoryBytes() / 4;
  if (memory < kMinMemoryBytes) {
    return Status::InvalidArgument("--memory " + FormatBytes(memory) +
                                   " is too small; convert needs at least " +
                                   FormatBytesAtLeast(kMinMemoryBytes));
  }
  summary.memory_budget_bytes = memory;
  SKIFF_RETURN_IF_ERROR(CheckFormatOptions(opt, summary.format));
  if (summary.format == InputFormat::kOgb) {
    SKIFF_ASSIGN_OR_RETURN(const OgbLayout layout, FindOgbLayout(opt.input, opt.ogb_split));
    if (layout.link) {
      if (opt.edge_split || opt.largest_component) {
        return Status::InvalidArgument(
            opt.input + ": split/" + layout.split_name +
            " is an OGB edge split, which the dataset keeps as given: --split-edges and "
            "--largest-component would change it");
      }
      SKIFF_ASSIGN_OR_RETURN(summary, ConvertThenGivenSplit(opt, summary, memory, layout));
      summary.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return summary;
    }
  }
  if (opt.edge_split) {
    SKIFF_ASSIGN_OR_RETURN(summary, ConvertThenSplitEdges(opt, summary, memory));
  } else {
    SKIFF_ASSIGN_OR_RETURN(summary, opt.largest_component
                                        ? ConvertLargestComponent(opt, summary, memory)
                                        : ConvertWhole(opt, summary, memory));
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace skiff::convert
