// Streaming dataset generation (see include/skiff/generate/generator.h).
//
// Pipeline: nodes are cut into chunks of kChunkNodes; a round of `threads` chunks is generated in
// parallel into one of two buffer sets while the previous round is appended, in node order, to the
// dataset files by this thread. Memory: 2 * threads chunk buffers (features dominate:
// kChunkNodes * F * 4 bytes each) plus the per-class split lists of a per-class split.
#include "skiff/generate/generator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "skiff/generate/sbm_model.h"
#include "skiff/half.h"
#include "skiff/io/free_space.h"
#include "skiff/log.h"
#include "skiff/progress.h"
#include "skiff/random.h"
#include "skiff/units.h"

namespace skiff::generate {
namespace {

constexpr int64_t kChunkNodes = 8192;
constexpr uint64_t kSplitStream = 5;

struct Chunk {
  int64_t first = 0, count = 0;
  std::vector<int64_t> degrees;
  std::vector<char> neighbors;  // int32 or int64 per the dataset's neighbour dtype
  std::vector<char> features;   // float32 or float16 rows
  std::vector<int32_t> labels;
  std::vector<int64_t> train, valid, test;  // fraction splits only
  int64_t same_class_edges = 0, max_degree = 0, isolated = 0;
};

// Per-class split: the chosen nodes of every class, sorted.
struct PerClassSplit {
  std::vector<int64_t> train, valid, test;
  bool test_is_rest = true;
};

bool Contains(const std::vector<int64_t>& sorted, int64_t v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

void GenerateChunk(const SbmModel& model, const GenerateOptions& opt, bool wide,
                   const PerClassSplit* per_class, Chunk* out) {
  const int64_t f = opt.feature_dim;
  out->degrees.resize(static_cast<size_t>(out->count));
  out->neighbors.clear();
  out->features.resize(static_cast<size_t>(out->count * f) * format::DTypeBytes(opt.feature_dtype));
  out->labels.resize(static_cast<size_t>(out->count));
  out->train.clear();
  out->valid.clear();
  out->test.clear();
  out->same_class_edges = out->max_degree = out->isolated = 0;
  std::vector<int64_t> row;
  std::vector<uint64_t> scratch;
  std::vector<float> features(static_cast<size_t>(f));
  const double train_cut = opt.split.train_fraction;
  const double valid_cut = train_cut + opt.split.valid_fraction;
  const double test_cut = valid_cut + opt.split.test_fraction;
  for (int64_t k = 0; k < out->count; ++k) {
    const int64_t node = out->first + k;
    out->same_class_edges += model.Row(node, &row, &scratch);
    const auto degree = static_cast<int64_t>(row.size());
    out->degrees[static_cast<size_t>(k)] = degree;
    out->max_degree = std::max(out->max_degree, degree);
    out->isolated += degree == 0 ? 1 : 0;
    const size_t at = out->neighbors.size();
    if (wide) {
      out->neighbors.resize(at + row.size() * 8);
      std::memcpy(out->neighbors.data() + at, row.data(), row.size() * 8);
    } else {
      out->neighbors.resize(at + row.size() * 4);
      auto* dst = reinterpret_cast<int32_t*>(out->neighbors.data() + at);
      for (size_t e = 0; e < row.size(); ++e) dst[e] = static_cast<int32_t>(row[e]);
    }
    model.Features(node, features.data());
    if (opt.feature_dtype == format::DType::kFloat32) {
      std::memcpy(out->features.data() + k * f * 4, features.data(), static_cast<size_t>(f) * 4);
    } else {
      auto* dst = reinterpret_cast<uint16_t*>(out->features.data() + k * f * 2);
      for (int64_t d = 0; d < f; ++d) dst[d] = FloatToHalf(features[static_cast<size_t>(d)]);
    }
    out->labels[static_cast<size_t>(k)] = model.ClassOf(node);
    if (per_class != nullptr) {
      if (per_class->test_is_rest && !Contains(per_class->train, node) &&
          !Contains(per_class->valid, node)) {
        out->test.push_back(node);
      }
    } else {
      Rng rng(HashKey(opt.seed, kSplitStream, static_cast<uint64_t>(node)));
      const double u = rng.Uniform();
      if (u < train_cut)
        out->train.push_back(node);
      else if (u < valid_cut)
        out->valid.push_back(node);
      else if (u < test_cut)
        out->test.push_back(node);
    }
  }
}

// Draws train/valid(/test) nodes of every class: a uniform sample without replacement of the
// class's ranks (Floyd's algorithm), shuffled, cut in order.
PerClassSplit DrawPerClassSplit(const GenerateOptions& opt) {
  PerClassSplit split;
  split.test_is_rest = opt.split.test_per_class < 0;
  const int64_t n = opt.num_nodes, c = opt.num_classes;
  const NodePermutation perm(static_cast<uint64_t>(n), opt.seed);
  Rng rng(HashKey(opt.seed, kSplitStream, ~uint64_t{0}));
  for (int64_t cls = 0; cls < c; ++cls) {
    const int64_t size = n / c + (cls < n % c ? 1 : 0);
    const int64_t want = std::min(size, opt.split.train_per_class + opt.split.valid_per_class +
                                            (split.test_is_rest ? 0 : opt.split.test_per_class));
    std::vector<int64_t> ranks;
    std::unordered_set<int64_t> chosen;
    for (int64_t j = size - want; j < size; ++j) {
      const auto t = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(j + 1)));
      const int64_t pick = chosen.count(t) ? j : t;
      chosen.insert(pick);
      ranks.push_back(pick);
    }
    Shuffle(ranks, rng);
    for (size_t k = 0; k < ranks.size(); ++k) {
      const auto node =
          static_cast<int64_t>(perm.Forward(static_cast<uint64_t>(cls + ranks[k] * c)));
      const auto pos = static_cast<int64_t>(k);
      if (pos < opt.split.train_per_class)
        split.train.push_back(node);
      else if (pos < opt.split.train_per_class + opt.split.valid_per_class)
        split.valid.push_back(node);
      else
        split.test.push_back(node);
    }
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.valid.begin(), split.valid.end());
  std::sort(split.test.begin(), split.test.end());
  return split;
}

std::string FormatOptions(const GenerateOptions& o) {
  std::ostringstream s;
  s << "generate --nodes " << o.num_nodes << " --avg-degree " << o.avg_degree << " --classes "
    << o.num_classes << " --feature-dim " << o.feature_dim << " --homophily " << o.homophily
    << " --power-law-exponent " << o.power_law_exponent << " --feature-noise " << o.feature_noise
    << " --feature-dtype " << format::DTypeName(o.feature_dtype) << " --split ";
  if (o.split.kind == convert::SplitSpec::Kind::kPerClass) {
    s << "per-class:" << o.split.train_per_class << "," << o.split.valid_per_class;
    if (o.split.test_per_class >= 0) s << "," << o.split.test_per_class;
  } else {
    s << o.split.train_fraction << "," << o.split.valid_fraction << "," << o.split.test_fraction;
  }
  s << " --seed " << o.seed;
  return s.str();
}

struct Preset {
  const char* name;
  int64_t nodes;
  double avg_degree;
  int64_t classes;
  int64_t feature_dim;
  format::DType dtype;
  const char* split;
};

// docs/generate.md lists these; keep them in step.
constexpr Preset kPresets[] = {
    {"small", 10'000, 10, 8, 64, format::DType::kFloat32, "0.6,0.2,0.2"},
    {"1m", 1'000'000, 16, 16, 128, format::DType::kFloat32, "0.1,0.05,0.1"},
    {"10m", 10'000'000, 16, 32, 128, format::DType::kFloat32, "0.02,0.005,0.01"},
    {"100m", 100'000'000, 16, 64, 128, format::DType::kFloat16, "0.01,0.002,0.005"},
};

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

Result<GenerateOptions> PresetOptions(const std::string& preset) {
  for (const auto& p : kPresets) {
    if (preset != p.name) continue;
    GenerateOptions o;
    o.name = std::string("synthetic-") + p.name;
    o.num_nodes = p.nodes;
    o.avg_degree = p.avg_degree;
    o.num_classes = p.classes;
    o.feature_dim = p.feature_dim;
    o.feature_dtype = p.dtype;
    SKIFF_ASSIGN_OR_RETURN(o.split, convert::ParseSplitSpec(p.split, o.seed));
    return o;
  }
  std::string known;
  for (const auto& p : kPresets) known += (known.empty() ? "" : ", ") + std::string(p.name);
  return Status::InvalidArgument("unknown preset '" + preset + "' (expected one of " + known + ")");
}

Status ValidateOptions(const GenerateOptions& o) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument(what); };
  if (o.output.empty()) return bad("no output directory given (--out)");
  if (o.num_nodes < 1 || o.num_nodes >= (int64_t{1} << 40)) {
    return bad("--nodes must be in [1, 2^40), got " + std::to_string(o.num_nodes));
  }
  if (o.num_classes < 1 || o.num_classes > o.num_nodes || o.num_classes > (int64_t{1} << 30)) {
    return bad("--classes must be in [1, min(nodes, 2^30)], got " + std::to_string(o.num_classes));
  }
  if (!(o.avg_degree >= 0) || o.avg_degree > static_cast<double>(o.num_nodes / o.num_classes)) {
    return bad("--avg-degree must be in [0, nodes / classes], got " + std::to_string(o.avg_degree));
  }
  if (o.feature_dim < 1 || o.feature_dim > (1 << 20)) {
    return bad("--feature-dim must be in [1, 2^20], got " + std::to_string(o.feature_dim));
  }
  if (!(o.homophily >= 0 && o.homophily <= 1)) {
    return bad("--homophily must be in [0, 1], got " + std::to_string(o.homophily));
  }
  if (!(o.power_law_exponent > 1.05 && o.power_law_exponent <= 100)) {
    return bad("--power-law-exponent must be in (1.05, 100], got " +
               std::to_string(o.power_law_exponent));
  }
  if (!(o.feature_noise >= 0 && o.feature_noise <= 1e6)) {
    return bad("--feature-noise must be in [0, 1e6], got " + std::to_string(o.feature_noise));
  }
  if (o.feature_dtype != format::DType::kFloat32 && o.feature_dtype != format::DType::kFloat16) {
    return bad("--feature-dtype must be float32 or float16");
  }
  if (o.threads < 0 || o.threads > 1024) {
    return bad("--threads must be in [0, 1024], got " + std::to_string(o.threads));
  }
  return Status::Ok();
}

uint64_t EstimateBytes(const GenerateOptions& o) {
  const auto n = static_cast<uint64_t>(o.num_nodes);
  const uint64_t nbr_bytes = o.num_nodes >= (int64_t{1} << 31) ? 8 : 4;
  const double edges = static_cast<double>(o.num_nodes) * o.avg_degree;
  return (n + 1) * 8 + static_cast<uint64_t>(edges) * nbr_bytes +
         n * static_cast<uint64_t>(o.feature_dim) * format::DTypeBytes(o.feature_dtype) + n * 4 +
         n * 8;  // splits hold at most every node once
}

namespace {

// The seven files of a generated dataset, filled chunk by chunk in node order.
class GeneratedFiles {
 public:
  Status Create(format::DatasetWriter& writer) {
    const char* names[] = {format::kOffsetsFile, format::kNeighborsFile, format::kFeaturesFile,
                           format::kLabelsFile,  format::kTrainFile,     format::kValidFile,
                           format::kTestFile};
    for (size_t i = 0; i < files_.size(); ++i) {
      SKIFF_ASSIGN_OR_RETURN(files_[i], writer.CreateFile(names[i]));
    }
    const int64_t zero = 0;
    return files_[kOffsets]->Append(&zero, 8);
  }

  // Appends a generated chunk: offsets (running from the edges so far), neighbours, features,
  // labels and fraction splits; adds its counts to `summary` and `same_class`.
  Status Append(const Chunk& chunk, GenerateSummary* summary, int64_t* same_class) {
    offsets_.resize(chunk.degrees.size());
    for (size_t k = 0; k < chunk.degrees.size(); ++k) {
      edges_ += chunk.degrees[k];
      offsets_[k] = edges_;
    }
    SKIFF_RETURN_IF_ERROR(files_[kOffsets]->Append(offsets_.data(), offsets_.size() * 8));
    SKIFF_RETURN_IF_ERROR(
        files_[kNeighbors]->Append(chunk.neighbors.data(), chunk.neighbors.size()));
    SKIFF_RETURN_IF_ERROR(files_[kFeatures]->Append(chunk.features.data(), chunk.features.size()));
    SKIFF_RETURN_IF_ERROR(files_[kLabels]->Append(chunk.labels.data(), chunk.labels.size() * 4));
    SKIFF_RETURN_IF_ERROR(AppendIds(kTrain, chunk.train, &summary->train_count));
    SKIFF_RETURN_IF_ERROR(AppendIds(kValid, chunk.valid, &summary->valid_count));
    SKIFF_RETURN_IF_ERROR(AppendIds(kTest, chunk.test, &summary->test_count));
    *same_class += chunk.same_class_edges;
    summary->max_out_degree = std::max(summary->max_out_degree, chunk.max_degree);
    summary->isolated_nodes += chunk.isolated;
    return Status::Ok();
  }

  // Per-class splits, drawn before generation, come after every chunk (whose split vectors are
  // then empty): train and valid, and test unless it is "the rest" (drawn per chunk).
  Status AppendPerClassSplit(const PerClassSplit& split, GenerateSummary* summary) {
    summary->train_count = summary->valid_count = 0;
    SKIFF_RETURN_IF_ERROR(AppendIds(kTrain, split.train, &summary->train_count));
    SKIFF_RETURN_IF_ERROR(AppendIds(kValid, split.valid, &summary->valid_count));
    if (split.test_is_rest) return Status::Ok();
    summary->test_count = 0;
    return AppendIds(kTest, split.test, &summary->test_count);
  }

  // Finishes every file (checksums, sidecars); adds their bytes to summary->bytes_written.
  Status Finish(format::DatasetWriter& writer, GenerateSummary* summary) {
    for (auto& file : files_) {
      summary->bytes_written += file->bytes_written();
      SKIFF_RETURN_IF_ERROR(writer.FinishFile(*file));
    }
    return Status::Ok();
  }

  int64_t edges() const { return edges_; }

 private:
  enum Index { kOffsets, kNeighbors, kFeatures, kLabels, kTrain, kValid, kTest, kCount };
  Status AppendIds(Index index, const std::vector<int64_t>& ids, int64_t* count) {
    *count += static_cast<int64_t>(ids.size());
    return files_[index]->Append(ids.data(), ids.size() * 8);
  }

  std::array<std::unique_ptr<format::ChecksummedFileWriter>, kCount> files_;
  std::vector<int64_t> offsets_;
  int64_t edges_ = 0;
};

void FillManifest(const GenerateOptions& opt, bool wide, format::Manifest* m) {
  m->name = opt.name;
  m->source = FormatOptions(opt);
  m->num_nodes = opt.num_nodes;
  m->undirected = false;
  m->neighbor_dtype = wide ? format::DType::kInt64 : format::DType::kInt32;
  m->feature_dim = opt.feature_dim;
  m->feature_dtype = opt.feature_dtype;
  m->num_classes = opt.num_classes;
}

// Generates the nodes in chunks of kChunkNodes, `threads` chunks per round, and hands the chunks
// to `consume` in node order. Round r + 1 is generated (into the other buffer set) while round r is
// consumed.
Status GenerateChunks(const SbmModel& model, const GenerateOptions& opt, bool wide,
                      const PerClassSplit* per_class, int threads,
                      const std::function<Status(const Chunk&)>& consume) {
  const int64_t num_chunks = (opt.num_nodes + kChunkNodes - 1) / kChunkNodes;
  const int64_t num_rounds = (num_chunks + threads - 1) / threads;
  std::vector<Chunk> buffers[2];
  buffers[0].resize(static_cast<size_t>(threads));
  buffers[1].resize(static_cast<size_t>(threads));
  // Starts round `round` into buffer set round % 2; the returned threads join when destroyed.
  auto launch = [&](int64_t round) {
    std::vector<std::jthread> workers;
    auto& set = buffers[round % 2];
    for (int t = 0; t < threads; ++t) {
      Chunk& chunk = set[static_cast<size_t>(t)];
      const int64_t index = round * threads + t;
      chunk.first = std::min(opt.num_nodes, index * kChunkNodes);
      chunk.count = std::min(opt.num_nodes, chunk.first + kChunkNodes) - chunk.first;
      if (chunk.count == 0) continue;
      workers.emplace_back([&model, &opt, wide, per_class, &chunk] {
        GenerateChunk(model, opt, wide, per_class, &chunk);
      });
    }
    return workers;
  };
  auto current = launch(0);
  for (int64_t round = 0; round < num_rounds; ++round) {
    current.clear();  // joins round `round`
    std::vector<std::jthread> next;
    if (round + 1 < num_rounds) next = launch(round + 1);
    for (auto& chunk : buffers[round % 2]) {
      if (chunk.count == 0) continue;
      SKIFF_RETURN_IF_ERROR(consume(chunk));  // `next` joins on return
      chunk.count = 0;
    }
    current = std::move(next);
  }
  return Status::Ok();
}

}  // namespace

Result<GenerateSummary> GenerateDataset(const GenerateOptions& opt) {
  SKIFF_RETURN_IF_ERROR(ValidateOptions(opt));
  const auto start = std::chrono::steady_clock::now();
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
  SKIFF_RETURN_IF_ERROR(
      io::CheckFreeSpace(writer->temp_dir(), EstimateBytes(opt), "generating into " + opt.output));
  const SbmModel model(opt);
  const bool wide = opt.num_nodes >= (int64_t{1} << 31);
  const int threads =
      opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  const bool per_class = opt.split.kind == convert::SplitSpec::Kind::kPerClass;
  PerClassSplit class_split;
  if (per_class) class_split = DrawPerClassSplit(opt);
  auto& m = writer->manifest();
  FillManifest(opt, wide, &m);
  GeneratedFiles files;
  SKIFF_RETURN_IF_ERROR(files.Create(*writer));

  LogInfo("generating " + std::to_string(opt.num_nodes) + " nodes, ~" +
          FormatCount(static_cast<double>(opt.num_nodes) * opt.avg_degree) + " edges, " +
          std::to_string(opt.feature_dim) + " features (" + format::DTypeName(opt.feature_dtype) +
          "), " + std::to_string(opt.num_classes) + " classes into " + opt.output + " with " +
          std::to_string(threads) + " threads (about " + FormatBytes(EstimateBytes(opt)) + ")");
  GenerateSummary summary;
  summary.num_nodes = opt.num_nodes;
  int64_t same_class = 0;
  Progress progress("generate", static_cast<uint64_t>(opt.num_nodes), "nodes");
  SKIFF_RETURN_IF_ERROR(GenerateChunks(model, opt, wide, per_class ? &class_split : nullptr,
                                       threads, [&](const Chunk& chunk) {
                                         progress.Add(static_cast<uint64_t>(chunk.count));
                                         return files.Append(chunk, &summary, &same_class);
                                       }));
  progress.Finish();
  if (per_class) SKIFF_RETURN_IF_ERROR(files.AppendPerClassSplit(class_split, &summary));
  SKIFF_RETURN_IF_ERROR(files.Finish(*writer, &summary));
  m.num_edges = summary.num_edges = files.edges();
  m.train_count = summary.train_count;
  m.valid_count = summary.valid_count;
  m.test_count = summary.test_count;
  SKIFF_RETURN_IF_ERROR(writer->Commit());
  summary.edge_homophily = summary.num_edges > 0 ? static_cast<double>(same_class) /
                                                       static_cast<double>(summary.num_edges)
                                                 : 0;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace skiff::generate
