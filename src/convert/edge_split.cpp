// Edge split for link prediction (see include/skiff/convert/edge_split.h).
//
// Decision: a unit's split is a hash of (seed, min(u, v), max(u, v)), not a shuffle of the edge
// list, so that the graph is rewritten in one streamed pass with no per-edge state: both stored
// directions of an undirected edge meet the same verdict in different rows. The price is counts
// that are binomial rather than exact, as with PyG's per-edge Bernoulli masks.
#include "skiff/convert/edge_split.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <unordered_set>
#include <utility>
#include <vector>

#include "skiff/progress.h"
#include "skiff/random.h"

namespace skiff::convert {
namespace {

namespace fs = std::filesystem;
using format::ChecksummedFileReader;
using format::ChecksummedFileWriter;
using format::DType;

// Streaming chunk sizes: nodes of graph.offsets, neighbours, and bytes of copied files, per read;
// pairs buffered before an append.
constexpr int64_t kChunkNodes = int64_t{1} << 16;
constexpr int64_t kChunkEdges = int64_t{1} << 20;
constexpr uint64_t kCopyBufferBytes = uint64_t{4} << 20;
constexpr size_t kPairBufferInts = size_t{1} << 17;
// Non-edges are drawn in batches (sorted by source for the lookups) of at most this many; the
// draws give up after kMaxDrawsPerNonEdge per non-edge asked for (plus kExtraDraws).
constexpr int64_t kNonEdgeBatch = int64_t{1} << 16;
constexpr int64_t kMaxDrawsPerNonEdge = 64;
constexpr int64_t kExtraDraws = 4096;

constexpr uint64_t kEdgeSplitStream = 0x4544474553504cULL;  // "EDGESPL"
constexpr uint64_t kNonEdgeStream = 0x4e4f4e45444745ULL;    // "NONEDGE"
// Ranking candidates of the valid and test pairs (their own streams: the test rows do not depend on
// how many valid pairs there are).
constexpr uint64_t kValidCandidateStream = 0x56434e44ULL;  // "VCND"
constexpr uint64_t kTestCandidateStream = 0x54434e44ULL;   // "TCND"

enum class Unit : uint8_t { kNone, kTrain, kValid, kTest };

Unit Classify(const EdgeSplitSpec& spec, int64_t u, int64_t v) {
  if (u == v) return Unit::kNone;  // self-loops stay in the graph
  const auto lo = static_cast<uint64_t>(std::min(u, v));
  const auto hi = static_cast<uint64_t>(std::max(u, v));
  const uint64_t h = Mix64(HashKey(spec.seed, kEdgeSplitStream, lo) ^ hi);
  const double x = static_cast<double>(h >> 11) * 0x1.0p-53;
  if (x < spec.valid_fraction) return Unit::kValid;
  if (x < spec.valid_fraction + spec.test_fraction) return Unit::kTest;
  if (x < spec.valid_fraction + spec.test_fraction + spec.train_fraction) return Unit::kTrain;
  return Unit::kNone;
}

// Reads `count` integers of `dtype` (int32 or int64) from element `first` of `file`, widened.
Status ReadInts(const ChecksummedFileReader& file, DType dtype, int64_t first, int64_t count,
                std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(count));
  if (count == 0) return Status::Ok();
  if (dtype == DType::kInt64) {
    return file.ReadAt(static_cast<uint64_t>(first) * 8, static_cast<uint64_t>(count) * 8,
                       out->data());
  }
  std::vector<int32_t> narrow(static_cast<size_t>(count));
  SKIFF_RETURN_IF_ERROR(file.ReadAt(static_cast<uint64_t>(first) * 4,
                                    static_cast<uint64_t>(count) * 4, narrow.data()));
  std::copy(narrow.begin(), narrow.end(), out->begin());
  return Status::Ok();
}

// Appends IDs to a file as int32 or int64.
Status AppendIds(ChecksummedFileWriter& file, bool wide, const std::vector<int64_t>& ids,
                 std::vector<int32_t>* narrow) {
  if (wide) return file.Append(ids.data(), ids.size() * 8);
  narrow->assign(ids.begin(), ids.end());
  return file.Append(narrow->data(), narrow->size() * 4);
}

// Offsets [first, first + count] of the source: ascending, from 0, ending at num_edges.
Status ReadOffsets(const format::Dataset& ds, int64_t first, int64_t count,
                   std::vector<int64_t>* offsets) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* file, ds.File(format::kOffsetsFile));
  SKIFF_RETURN_IF_ERROR(ReadInts(*file, DType::kInt64, first, count + 1, offsets));
  const auto& o = *offsets;
  const int64_t e = ds.manifest().num_edges;
  const bool last = first + count == ds.manifest().num_nodes;
  bool ok = (first != 0 || o[0] == 0) && o.back() <= e && (!last || o.back() == e);
  for (size_t i = 0; ok && i + 1 < o.size(); ++i) ok = o[i] <= o[i + 1];
  if (!ok) {
    return Status::Corruption(file->path() + ": offsets of nodes " + std::to_string(first) + ".." +
                              std::to_string(first + count) +
                              " decrease or leave [0, num_edges = " + std::to_string(e) + "]");
  }
  return Status::Ok();
}

// The pairs held out while the graph is rewritten (train pairs go straight to their file).
struct HeldOut {
  std::vector<int64_t> valid, test;  // (src, dst) interleaved
};

// Which split a stored edge (u, v)'s unit goes to.
using Classifier = std::function<Unit(int64_t u, int64_t v)>;

// Rewrites graph.offsets / graph.neighbors without the valid and test units. With `held`, appends
// the train units' pairs to link_train.edges as it goes and returns their count, *held getting the
// valid and test pairs; without (a given split, whose pairs are known), only removes them.
Result<int64_t> WriteGraph(const format::Dataset& ds, const Classifier& classify,
                           format::DatasetWriter& out, HeldOut* held, int64_t* edges_after) {
  const auto& m = ds.manifest();
  const int64_t n = m.num_nodes;
  const bool undirected = m.undirected;
  const bool wide = m.neighbor_dtype == DType::kInt64;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(format::kNeighborsFile));
  SKIFF_ASSIGN_OR_RETURN(auto offsets_file, out.CreateFile(format::kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(auto neighbors_file, out.CreateFile(format::kNeighborsFile));
  std::unique_ptr<ChecksummedFileWriter> train_file;
  if (held != nullptr) {
    SKIFF_ASSIGN_OR_RETURN(train_file, out.CreateFile(format::kLinkTrainFile));
  }
  std::vector<int64_t> offsets, neighbors, kept, kept_offsets, train;
  std::vector<int32_t> narrow;
  int64_t edges_kept = 0, train_pairs = 0;
  const int64_t zero = 0;
  SKIFF_RETURN_IF_ERROR(offsets_file->Append(&zero, 8));
  Progress progress("split edges", static_cast<uint64_t>(m.num_edges), "edges");
  for (int64_t first = 0; first < n; first += kChunkNodes) {
    const int64_t count = std::min(kChunkNodes, n - first);
    SKIFF_RETURN_IF_ERROR(ReadOffsets(ds, first, count, &offsets));
    std::vector<int64_t> row_kept(static_cast<size_t>(count), 0);
    size_t row = 0;
    for (int64_t begin = offsets[0]; begin < offsets.back();) {
      const int64_t end = std::min(begin + kChunkEdges, offsets.back());
      SKIFF_RETURN_IF_ERROR(ReadInts(*in, m.neighbor_dtype, begin, end - begin, &neighbors));
      kept.clear();
      for (int64_t e = begin; e < end; ++e) {
        while (offsets[row + 1] <= e) ++row;
        const int64_t u = first + static_cast<int64_t>(row);
        const int64_t v = neighbors[static_cast<size_t>(e - begin)];
        if (v < 0 || v >= n) {
          return Status::Corruption(in->path() + ": edge " + std::to_string(e) + " leads to node " +
                                    std::to_string(v) + ", outside [0, " + std::to_string(n) + ")");
        }
        const Unit unit = classify(u, v);
        const bool first_direction = !undirected || u < v;  // the stored pair of the unit
        if (unit == Unit::kValid || unit == Unit::kTest) {
          if (first_direction && held != nullptr) {
            auto& pairs = unit == Unit::kValid ? held->valid : held->test;
            pairs.push_back(u);
            pairs.push_back(v);
          }
          continue;  // removed from the message-passing graph
        }
        if (unit == Unit::kTrain && first_direction && held != nullptr) {
          train.push_back(u);
          train.push_back(v);
        }
        kept.push_back(v);
        ++row_kept[row];
      }
      SKIFF_RETURN_IF_ERROR(AppendIds(*neighbors_file, wide, kept, &narrow));
      if (train_file != nullptr && train.size() >= kPairBufferInts) {
        SKIFF_RETURN_IF_ERROR(train_file->Append(train.data(), train.size() * 8));
        train_pairs += static_cast<int64_t>(train.size() / 2);
        train.clear();
      }
      progress.Set(static_cast<uint64_t>(end));
      begin = end;
    }
    kept_offsets.clear();
    for (const int64_t k : row_kept) kept_offsets.push_back(edges_kept += k);
    SKIFF_RETURN_IF_ERROR(offsets_file->Append(kept_offsets.data(), kept_offsets.size() * 8));
  }
  progress.Finish();
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*offsets_file));
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*neighbors_file));
  if (train_file != nullptr) {
    SKIFF_RETURN_IF_ERROR(train_file->Append(train.data(), train.size() * 8));
    train_pairs += static_cast<int64_t>(train.size() / 2);
    SKIFF_RETURN_IF_ERROR(out.FinishFile(*train_file));
  }
  *edges_after = edges_kept;
  return train_pairs;
}

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return static_cast<size_t>(
        Mix64(static_cast<uint64_t>(p.first) * kGoldenGamma ^ static_cast<uint64_t>(p.second)));
  }
};

// The unit of a pair: (min, max) on an undirected graph, the pair as given on a directed one.
std::pair<int64_t, int64_t> UnitOf(int64_t u, int64_t v, bool undirected) {
  return undirected ? std::pair{std::min(u, v), std::max(u, v)} : std::pair{u, v};
}

// `count` non-edges of the source graph (see the header), drawn in batches: each batch is looked
// up sorted by source (so rows are read in order, each once) and accepted in draw order, so the
// result depends only on the seed and the graph.
Result<std::vector<int64_t>> DrawNonEdges(const format::Dataset& ds, const EdgeSplitSpec& spec,
                                          int64_t count) {
  std::vector<int64_t> pairs;
  if (count == 0) return pairs;
  const auto& m = ds.manifest();
  const int64_t n = m.num_nodes;
  // Pairs that could be non-edges: (u, v), u != v (unordered when undirected), minus the edges.
  const double possible =
      static_cast<double>(n) * static_cast<double>(n - 1) / (m.undirected ? 2.0 : 1.0);
  const double edges = static_cast<double>(m.num_edges) / (m.undirected ? 2.0 : 1.0);
  if (n < 2 || possible - edges < static_cast<double>(count)) {
    return Status::InvalidArgument(
        ds.dir() + ": the graph is too dense for " + std::to_string(count) +
        " non-edges (one per valid and test edge): it has " + std::to_string(n) + " nodes and " +
        std::to_string(m.num_edges) + " stored edges; hold out fewer edges");
  }
  using Pair = std::pair<int64_t, int64_t>;
  std::unordered_set<Pair, PairHash> seen;
  seen.reserve(static_cast<size_t>(count));
  pairs.reserve(static_cast<size_t>(count) * 2);
  Rng rng(HashKey(spec.seed, kNonEdgeStream, 0));
  format::EdgeLookup lookup(ds);
  const int64_t max_draws = kMaxDrawsPerNonEdge * count + kExtraDraws;
  int64_t draws = 0;
  std::vector<Pair> batch;
  std::vector<size_t> order;
  std::vector<uint8_t> is_edge;
  while (static_cast<int64_t>(pairs.size() / 2) < count) {
    const int64_t remaining = count - static_cast<int64_t>(pairs.size() / 2);
    if (draws >= max_draws) {
      return Status::InvalidArgument(
          ds.dir() + ": found only " + std::to_string(count - remaining) + " of " +
          std::to_string(count) + " non-edges in " + std::to_string(draws) +
          " random draws: the graph is too dense; hold out fewer edges");
    }
    const int64_t size = std::min(kNonEdgeBatch, remaining + remaining / 8 + 16);
    batch.clear();
    for (int64_t i = 0; i < size; ++i) {
      const auto u = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
      auto v = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n - 1)));
      if (v >= u) ++v;  // uniform over v != u
      batch.push_back(UnitOf(u, v, m.undirected));
    }
    draws += size;
    order.resize(batch.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return batch[a] < batch[b]; });
    is_edge.assign(batch.size(), 0);
    // An undirected graph stores both directions, so (min, max) alone decides.
    for (const size_t i : order) {
      SKIFF_ASSIGN_OR_RETURN(const bool found, lookup.Contains(batch[i].first, batch[i].second));
      is_edge[i] = found ? 1 : 0;
    }
    for (size_t i = 0; i < batch.size() && static_cast<int64_t>(pairs.size() / 2) < count; ++i) {
      if (is_edge[i] || !seen.insert(batch[i]).second) continue;
      pairs.push_back(batch[i].first);
      pairs.push_back(batch[i].second);
    }
  }
  return pairs;
}

// Copies a file of the source byte for byte (its checksums are recomputed as it is written).
Status CopyFile(const format::Dataset& ds, const std::string& name, format::DatasetWriter& out) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(name));
  SKIFF_ASSIGN_OR_RETURN(auto file, out.CreateFile(name));
  const uint64_t total = in->info().data_bytes;
  std::vector<char> buf(static_cast<size_t>(std::min(total, kCopyBufferBytes)));
  for (uint64_t at = 0; at < total;) {
    const uint64_t bytes = std::min<uint64_t>(kCopyBufferBytes, total - at);
    SKIFF_RETURN_IF_ERROR(in->ReadAt(at, bytes, buf.data()));
    SKIFF_RETURN_IF_ERROR(file->Append(buf.data(), bytes));
    at += bytes;
  }
  return out.FinishFile(*file);
}

// Every file but the graph's, and idmap/, into `out`.
Status CopyRest(const format::Dataset& source, format::DatasetWriter& out) {
  const format::Manifest& src = source.manifest();
  for (const auto& [name, info] : src.files) {
    if (name == format::kOffsetsFile || name == format::kNeighborsFile) continue;
    SKIFF_RETURN_IF_ERROR(CopyFile(source, name, out));
  }
  if (!src.has_id_map) return Status::Ok();
  const std::string idmap = source.dir() + "/" + format::kIdMapDir;
  std::error_code ec;
  fs::copy(idmap, out.temp_dir() + "/" + format::kIdMapDir, fs::copy_options::recursive, ec);
  if (ec) return Status::IOError("copy " + idmap + " into " + out.temp_dir() + ": " + ec.message());
  return Status::Ok();
}

// A source an edge split may be written from: no split yet, not partitioned.
Status CheckSplittable(const format::Dataset& source) {
  const format::Manifest& src = source.manifest();
  if (src.link_split) {
    return Status::InvalidArgument(source.dir() +
                                   " already has an edge split; split the dataset it was made "
                                   "from instead");
  }
  if (src.partitions) {
    return Status::InvalidArgument(source.dir() +
                                   " is partitioned; split the edges of the unpartitioned dataset "
                                   "and partition afterwards (`skiff partition` keeps the split)");
  }
  return Status::Ok();
}

// Writes `name`: `k` candidates for each of `pairs` pairs, row i drawn uniformly from
// [0, num_nodes) by Rng(HashKey(seed, stream, i)), streamed in kCopyBufferBytes chunks.
Status WriteDrawnCandidates(const std::string& name, int64_t pairs, int64_t k, int64_t num_nodes,
                            uint64_t seed, uint64_t stream, format::DatasetWriter& out) {
  SKIFF_ASSIGN_OR_RETURN(auto file, out.CreateFile(name));
  const auto per_chunk = static_cast<size_t>(
      std::max<uint64_t>(1, kCopyBufferBytes / (static_cast<uint64_t>(k) * sizeof(int64_t))));
  std::vector<int64_t> rows;
  rows.reserve(per_chunk * static_cast<size_t>(k));
  for (int64_t i = 0; i < pairs;) {
    rows.clear();
    for (size_t r = 0; r < per_chunk && i < pairs; ++r, ++i) {
      Rng rng(HashKey(seed, stream, static_cast<uint64_t>(i)));
      for (int64_t j = 0; j < k; ++j) {
        rows.push_back(static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_nodes))));
      }
    }
    SKIFF_RETURN_IF_ERROR(file->Append(rows.data(), rows.size() * sizeof(int64_t)));
  }
  return out.FinishFile(*file);
}

Status CheckSpec(const EdgeSplitSpec& spec) {
  for (const double f : {spec.train_fraction, spec.valid_fraction, spec.test_fraction}) {
    if (!(f >= 0 && f <= 1)) {
      return Status::InvalidArgument("edge split: fractions must lie in [0, 1]");
    }
  }
  if (spec.train_fraction + spec.valid_fraction + spec.test_fraction > 1 + 1e-9) {
    return Status::InvalidArgument("edge split: fractions sum to more than 1");
  }
  if (spec.candidates < 0) {
    return Status::InvalidArgument("edge split: " + std::to_string(spec.candidates) +
                                   " ranking candidates per pair: the count cannot be negative");
  }
  return Status::Ok();
}

}  // namespace

Result<EdgeSplitSpec> ParseEdgeSplitSpec(const std::string& text, uint64_t seed,
                                         const std::string& option) {
  const std::string usage = " (expected three fractions TRAIN,VALID,TEST such as 0.85,0.05,0.1)";
  std::vector<double> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || errno != 0 || !std::isfinite(v)) {
      return Status::InvalidArgument(option + " '" + text + "': '" + part + "' is not a number" +
                                     usage);
    }
    if (v < 0 || v > 1) {
      return Status::InvalidArgument(option + " '" + text + "': " + part + " lies outside [0, 1]" +
                                     usage);
    }
    values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() != 3) {
    return Status::InvalidArgument(option + " '" + text + "': " + std::to_string(values.size()) +
                                   " fraction" + (values.size() == 1 ? "" : "s") + usage);
  }
  const double sum = values[0] + values[1] + values[2];
  if (sum > 1 + 1e-9) {
    return Status::InvalidArgument(option + " '" + text + "': the fractions sum to " +
                                   std::to_string(sum) + ", more than 1" + usage);
  }
  EdgeSplitSpec spec;
  spec.train_fraction = values[0];
  spec.valid_fraction = values[1];
  spec.test_fraction = values[2];
  spec.seed = seed;
  return spec;
}

Result<EdgeSplitSummary> WriteEdgeSplit(const format::Dataset& source, format::DatasetWriter& out,
                                        const EdgeSplitSpec& spec) {
  SKIFF_RETURN_IF_ERROR(CheckSpec(spec));
  SKIFF_RETURN_IF_ERROR(CheckSplittable(source));
  const format::Manifest& src = source.manifest();
  if (spec.candidates > 0 && src.undirected) {
    return Status::InvalidArgument(
        source.dir() +
        " is undirected: ranking candidates need a directed dataset (an undirected pair is "
        "stored as (min, max), which loses the endpoint the candidates replace; docs/FORMAT.md)");
  }
  SKIFF_CHECK_MSG(out.manifest().files.empty(), "WriteEdgeSplit needs an empty writer");
  format::Manifest& m = out.manifest();
  m = src;
  m.files.clear();

  EdgeSplitSummary s;
  s.edges_before = src.num_edges;
  HeldOut held;
  const Classifier classify = [&spec](int64_t u, int64_t v) { return Classify(spec, u, v); };
  SKIFF_ASSIGN_OR_RETURN(s.split.train, WriteGraph(source, classify, out, &held, &s.edges_after));
  m.num_edges = s.edges_after;
  s.split.valid = static_cast<int64_t>(held.valid.size() / 2);
  s.split.test = static_cast<int64_t>(held.test.size() / 2);
  SKIFF_RETURN_IF_ERROR(
      out.WriteFile(format::kLinkValidFile, held.valid.data(), held.valid.size() * 8));
  SKIFF_RETURN_IF_ERROR(
      out.WriteFile(format::kLinkTestFile, held.test.data(), held.test.size() * 8));
  std::vector<int64_t>().swap(held.valid);
  std::vector<int64_t>().swap(held.test);

  // Non-edges of the source graph, so that no held-out edge is drawn as one.
  SKIFF_ASSIGN_OR_RETURN(auto non_edges, DrawNonEdges(source, spec, s.split.valid + s.split.test));
  const size_t valid_ints = static_cast<size_t>(s.split.valid) * 2;
  SKIFF_RETURN_IF_ERROR(out.WriteFile(format::kLinkValidNegFile, non_edges.data(), valid_ints * 8));
  SKIFF_RETURN_IF_ERROR(out.WriteFile(format::kLinkTestNegFile, non_edges.data() + valid_ints,
                                      (non_edges.size() - valid_ints) * 8));
  s.split.valid_neg = s.split.valid;
  s.split.test_neg = s.split.test;
  if (spec.candidates > 0) {
    SKIFF_RETURN_IF_ERROR(WriteDrawnCandidates(format::kLinkValidCandFile, s.split.valid,
                                               spec.candidates, src.num_nodes, spec.seed,
                                               kValidCandidateStream, out));
    SKIFF_RETURN_IF_ERROR(WriteDrawnCandidates(format::kLinkTestCandFile, s.split.test,
                                               spec.candidates, src.num_nodes, spec.seed,
                                               kTestCandidateStream, out));
    s.split.candidates = spec.candidates;
  }
  s.split.train_fraction = spec.train_fraction;
  s.split.valid_fraction = spec.valid_fraction;
  s.split.test_fraction = spec.test_fraction;
  s.split.seed = spec.seed;
  m.link_split = s.split;

  SKIFF_RETURN_IF_ERROR(CopyRest(source, out));
  return s;
}

namespace {

using Pair = std::pair<int64_t, int64_t>;
using PairSet = std::unordered_set<Pair, PairHash>;

// The positives of one given file as units (normalised when undirected), self-loops and repeats
// dropped (counted in *report), kept in order; each also into *units, and its index in `pairs`
// into *kept when that is not null.
std::vector<int64_t> GivenUnits(const std::vector<int64_t>& pairs, bool undirected, PairSet* units,
                                GivenSplitReport* report, std::vector<size_t>* kept = nullptr) {
  std::vector<int64_t> out;
  out.reserve(pairs.size());
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const int64_t u = pairs[i], v = pairs[i + 1];
    if (u == v) {
      ++report->self_loops;
      continue;
    }
    const Pair p = UnitOf(u, v, undirected);
    if (!units->insert(p).second) {
      ++report->repeated;
      continue;
    }
    out.push_back(p.first);
    out.push_back(p.second);
    if (kept != nullptr) kept->push_back(i / 2);
  }
  return out;
}

// The rows of `candidates` (k per pair) of the pairs in `kept`, in that order.
std::vector<int64_t> KeptRows(const std::vector<int64_t>& candidates, int64_t k,
                              const std::vector<size_t>& kept) {
  std::vector<int64_t> out;
  out.reserve(kept.size() * static_cast<size_t>(k));
  for (size_t pair : kept) {
    const auto row = candidates.begin() + static_cast<ptrdiff_t>(pair * static_cast<size_t>(k));
    out.insert(out.end(), row, row + k);
  }
  return out;
}

// Which of `pairs` (interleaved) are edges of `ds`, looked up in source order (each row read once).
Result<std::vector<uint8_t>> AreEdges(const format::Dataset& ds,
                                      const std::vector<int64_t>& pairs) {
  const size_t count = pairs.size() / 2;
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return Pair{pairs[2 * a], pairs[2 * a + 1]} < Pair{pairs[2 * b], pairs[2 * b + 1]};
  });
  std::vector<uint8_t> found(count, 0);
  format::EdgeLookup lookup(ds);
  for (const size_t i : order) {
    SKIFF_ASSIGN_OR_RETURN(const bool edge, lookup.Contains(pairs[2 * i], pairs[2 * i + 1]));
    found[i] = edge ? 1 : 0;
  }
  return found;
}

}  // namespace

Result<EdgeSplitSummary> WriteGivenEdgeSplit(const format::Dataset& source,
                                             format::DatasetWriter& out, GivenEdgeSplit given,
                                             GivenSplitReport* report) {
  SKIFF_RETURN_IF_ERROR(CheckSplittable(source));
  SKIFF_CHECK_MSG(out.manifest().files.empty(), "WriteGivenEdgeSplit needs an empty writer");
  const format::Manifest& src = source.manifest();
  const bool undirected = src.undirected;
  const int64_t k = given.candidates;
  if (k > 0 &&
      (undirected || given.valid_cand.size() != given.valid.size() / 2 * static_cast<size_t>(k) ||
       given.test_cand.size() != given.test.size() / 2 * static_cast<size_t>(k))) {
    return Status::InvalidArgument(
        given.origin + (undirected ? ": ranking candidates need a directed dataset"
                                   : ": the ranking candidates do not match the pairs, " +
                                         std::to_string(k) + " per pair"));
  }
  GivenSplitReport r;
  PairSet valid_units, test_units, train_units;
  std::vector<size_t> valid_kept, test_kept;
  std::vector<int64_t> valid = GivenUnits(given.valid, undirected, &valid_units, &r, &valid_kept);
  std::vector<int64_t> test = GivenUnits(given.test, undirected, &test_units, &r, &test_kept);
  for (size_t i = 0; i < test.size(); i += 2) {
    if (valid_units.count({test[i], test[i + 1]}) != 0) {
      return Status::InvalidArgument(given.origin + ": the pair (" + std::to_string(test[i]) +
                                     ", " + std::to_string(test[i + 1]) +
                                     ") is both a valid and a test edge");
    }
  }
  std::vector<int64_t> train;
  for (size_t i = 0, n = given.train.size(); i + 1 < n; i += 2) {
    const int64_t u = given.train[i], v = given.train[i + 1];
    const Pair p = UnitOf(u, v, undirected);
    if (u != v && (valid_units.count(p) != 0 || test_units.count(p) != 0)) {
      ++r.train_also_held_out;
      continue;
    }
    train.push_back(u);
    train.push_back(v);
  }
  train = GivenUnits(train, undirected, &train_units, &r);
  // Train pairs must be edges of the graph (they stay in it).
  SKIFF_ASSIGN_OR_RETURN(const std::vector<uint8_t> present, AreEdges(source, train));
  std::vector<int64_t> kept;
  for (size_t i = 0; i < present.size(); ++i) {
    if (!present[i]) {
      ++r.train_not_in_graph;
      continue;
    }
    kept.push_back(train[2 * i]);
    kept.push_back(train[2 * i + 1]);
  }
  train.swap(kept);

  format::Manifest& m = out.manifest();
  m = src;
  m.files.clear();
  EdgeSplitSummary s;
  s.edges_before = src.num_edges;
  const Classifier held_out = [&](int64_t u, int64_t v) {
    const Pair p = UnitOf(u, v, undirected);
    return valid_units.count(p) != 0 || test_units.count(p) != 0 ? Unit::kValid : Unit::kNone;
  };
  SKIFF_RETURN_IF_ERROR(WriteGraph(source, held_out, out, nullptr, &s.edges_after).status());
  r.graph_edges_removed = src.num_edges - s.edges_after;
  m.num_edges = s.edges_after;

  // Negatives: no self-loop, repeat, held-out positive or edge of the source graph.
  PairSet negative_units;
  std::vector<int64_t> negatives[2];
  for (int part = 0; part < 2; ++part) {
    const std::vector<int64_t>& in = part == 0 ? given.valid_neg : given.test_neg;
    std::vector<int64_t> candidates;
    for (size_t i = 0; i + 1 < in.size(); i += 2) {
      const int64_t u = in[i], v = in[i + 1];
      const Pair p = UnitOf(u, v, undirected);
      if (u == v || valid_units.count(p) != 0 || test_units.count(p) != 0 ||
          !negative_units.insert(p).second) {
        ++r.negatives_dropped;
        continue;
      }
      candidates.push_back(p.first);
      candidates.push_back(p.second);
    }
    SKIFF_ASSIGN_OR_RETURN(const std::vector<uint8_t> edge, AreEdges(source, candidates));
    for (size_t i = 0; i < edge.size(); ++i) {
      if (edge[i]) {
        ++r.negatives_dropped;
        continue;
      }
      negatives[part].push_back(candidates[2 * i]);
      negatives[part].push_back(candidates[2 * i + 1]);
    }
  }
  const std::pair<const char*, const std::vector<int64_t>*> files[] = {
      {format::kLinkTrainFile, &train},
      {format::kLinkValidFile, &valid},
      {format::kLinkTestFile, &test},
      {format::kLinkValidNegFile, &negatives[0]},
      {format::kLinkTestNegFile, &negatives[1]}};
  for (const auto& [name, pairs] : files) {
    SKIFF_RETURN_IF_ERROR(out.WriteFile(name, pairs->data(), pairs->size() * 8));
  }
  if (k > 0) {
    const std::vector<int64_t> valid_cand = KeptRows(given.valid_cand, k, valid_kept);
    const std::vector<int64_t> test_cand = KeptRows(given.test_cand, k, test_kept);
    SKIFF_RETURN_IF_ERROR(
        out.WriteFile(format::kLinkValidCandFile, valid_cand.data(), valid_cand.size() * 8));
    SKIFF_RETURN_IF_ERROR(
        out.WriteFile(format::kLinkTestCandFile, test_cand.data(), test_cand.size() * 8));
    s.split.candidates = k;
  }
  s.split.train = static_cast<int64_t>(train.size() / 2);
  s.split.valid = static_cast<int64_t>(valid.size() / 2);
  s.split.test = static_cast<int64_t>(test.size() / 2);
  s.split.valid_neg = static_cast<int64_t>(negatives[0].size() / 2);
  s.split.test_neg = static_cast<int64_t>(negatives[1].size() / 2);
  m.link_split = s.split;  // with its candidates (set above)
  m.source += ", edge split from " + given.origin;
  SKIFF_RETURN_IF_ERROR(CopyRest(source, out));
  if (report != nullptr) *report = r;
  return s;
}

}  // namespace skiff::convert
