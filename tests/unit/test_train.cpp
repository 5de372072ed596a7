#include <doctest/doctest.h>
#include <xxhash.h>

#include <limits>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "kernels/cpu/parallel.h"
#include "skiff/convert/npz_graph.h"
#include "skiff/io/npy.h"
#include "skiff/io/npy_writer.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/checkpoint.h"
#include "skiff/train/trainer.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::train;
using skiff::testing::FlipByte;

namespace {

// Two noisy classes on a random graph where neighbours mostly share a class.
struct Synthetic {
  std::unique_ptr<sampler::InMemoryGraph> graph;
  std::unique_ptr<sampler::InMemoryFeatures> features;
  TrainData data;
};

std::unique_ptr<Synthetic> MakeSynthetic(int64_t n, int64_t dim, uint64_t seed) {
  auto s = std::make_unique<Synthetic>();
  std::mt19937_64 rng(seed);
  std::vector<int32_t> labels(n);
  for (int64_t v = 0; v < n; ++v) labels[v] = static_cast<int32_t>(rng() % 2);
  std::vector<int64_t> offsets{0}, nbrs;
  for (int64_t v = 0; v < n; ++v) {
    std::set<int64_t> row;
    while (row.size() < 6) {
      const int64_t w = static_cast<int64_t>(rng() % n);
      if (w != v && (labels[w] == labels[v] || rng() % 5 == 0)) row.insert(w);
    }
    nbrs.insert(nbrs.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(nbrs.size()));
  }
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> x(n * dim);
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = 0; k < dim; ++k) x[v * dim + k] = noise(rng) + (k == labels[v] ? 0.7f : 0.0f);
  }
  s->graph = std::move(sampler::InMemoryGraph::FromCsr(offsets, nbrs)).value();
  s->features = std::move(sampler::InMemoryFeatures::FromMatrix(x, dim)).value();
  s->data.graph = s->graph.get();
  s->data.features = s->features.get();
  s->data.labels = labels;
  s->data.num_classes = 2;
  for (int64_t v = 0; v < n; ++v)
    (v % 4 == 0 ? s->data.valid : v % 4 == 1 ? s->data.test : s->data.train).push_back(v);
  return s;
}

// A linear model on the seeds' own features that records every seed it is trained on.
class RecordingModel final : public model::Model {
 public:
  explicit RecordingModel(const model::ModelConfig& c)
      : Model(c), w_(c.in_dim * c.num_classes, 0.01f), g_(w_.size(), 0.0f) {}
  Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings) override {
    const int64_t rows = static_cast<int64_t>(batch.seeds.size());
    const int64_t d = config_.in_dim, c = config_.num_classes;
    if (training) seen.insert(seen.end(), batch.seeds.begin(), batch.seeds.end());
    x_.assign(x, x + rows * d);
    rows_ = rows;
    logits->assign(rows * c, 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < d; ++k)
        for (int64_t j = 0; j < c; ++j) (*logits)[i * c + j] += x[i * d + k] * w_[k * c + j];
    if (embeddings != nullptr) embeddings->assign(x, x + rows * d);
    return Status::Ok();
  }
  Status Backward(const float* grad) override {
    const int64_t d = config_.in_dim, c = config_.num_classes;
    for (int64_t i = 0; i < rows_; ++i)
      for (int64_t k = 0; k < d; ++k)
        for (int64_t j = 0; j < c; ++j) g_[k * c + j] += x_[i * d + k] * grad[i * c + j];
    return Status::Ok();
  }
  std::vector<model::Parameter> Parameters() override {
    return {{"w", {config_.in_dim, config_.num_classes}, w_.data(), g_.data()}};
  }
  std::vector<int64_t> seen;

 private:
  std::vector<float> w_, g_, x_;
  int64_t rows_ = 0;
};

// A model factory that makes a RecordingModel and points *recorder at it.
ModelFactory RecordingFactory(RecordingModel** recorder) {
  return [recorder](const model::ModelConfig& c) -> Result<std::unique_ptr<model::Model>> {
    auto m = std::make_unique<RecordingModel>(c);
    *recorder = m.get();
    return std::unique_ptr<model::Model>(std::move(m));
  };
}

TrainOptions SmallOptions() {
  TrainOptions o;
  o.model.kind = model::ModelKind::kSage;
  o.model.num_layers = 2;
  o.model.hidden_dim = 16;
  o.model.dropout = 0.5f;
  o.fanouts = {4, 3};
  o.batch_size = 50;
  o.eval_batch_size = 100;
  o.epochs = 4;
  o.seed = 3;
  o.sampler_threads = 2;
  o.show_progress = false;
  return o;
}

}  // namespace

TEST_CASE("trainer: every training node is visited exactly once per epoch") {
  auto s = MakeSynthetic(400, 4, 1);
  RecordingModel* recorder = nullptr;
  const ModelFactory factory = RecordingFactory(&recorder);
  TrainOptions o = SmallOptions();
  o.epochs = 3;
  auto t = Trainer::Create(s->data, o, factory);
  REQUIRE(t.ok());
  auto summary = (*t)->Run();
  REQUIRE(summary.ok());
  REQUIRE(summary->epochs.size() == 3);
  const size_t n = s->data.train.size();
  REQUIRE(recorder->seen.size() == 3 * n);
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> epoch(recorder->seen.begin() + e * n,
                               recorder->seen.begin() + (e + 1) * n);
    std::sort(epoch.begin(), epoch.end());
    CHECK(epoch == s->data.train);
  }
  // Different epochs see different orders.
  CHECK(
      !std::equal(recorder->seen.begin(), recorder->seen.begin() + n, recorder->seen.begin() + n));
}

TEST_CASE(
    "trainer: --epoch-fraction trains each epoch on a fresh subset, every node once a cycle") {
  auto s = MakeSynthetic(400, 4, 1);
  RecordingModel* recorder = nullptr;
  const ModelFactory factory = RecordingFactory(&recorder);
  TrainOptions o = SmallOptions();
  o.epochs = 6;
  o.epoch_fraction = 0.34f;  // cycles of 3 epochs: 66 + 67 + 67 of the 200 training nodes
  auto t = Trainer::Create(s->data, o, factory);
  REQUIRE(t.ok());
  auto summary = (*t)->Run();
  REQUIRE(summary.ok());
  const std::vector<int64_t>& train = s->data.train;
  REQUIRE(train.size() == 200);
  REQUIRE(recorder->seen.size() == 2 * train.size());
  size_t at = 0;
  std::vector<std::vector<int64_t>> cycles(2);
  for (int e = 0; e < 6; ++e) {
    const size_t size = e % 3 == 0 ? 66 : 67;
    std::vector<int64_t> epoch(recorder->seen.begin() + static_cast<ptrdiff_t>(at),
                               recorder->seen.begin() + static_cast<ptrdiff_t>(at + size));
    at += size;
    std::sort(epoch.begin(), epoch.end());
    CHECK(epoch == EpochSubset(train, o.epoch_fraction, o.seed, static_cast<uint64_t>(e)));
    cycles[static_cast<size_t>(e / 3)].insert(cycles[static_cast<size_t>(e / 3)].end(),
                                              epoch.begin(), epoch.end());
  }
  for (auto& cycle : cycles) {
    std::sort(cycle.begin(), cycle.end());
    CHECK(cycle == train);  // every training node once per cycle, none twice
  }
  CHECK(EpochSubset(train, o.epoch_fraction, o.seed, 0) !=
        EpochSubset(train, o.epoch_fraction, o.seed, 3));  // cycles reshuffle
}

TEST_CASE("EpochSubset: slices of a per-cycle shuffle; the whole set at 1; seeded") {
  std::vector<int64_t> nodes;
  for (int64_t v = 0; v < 1000; v += 3) nodes.push_back(v);  // 334 nodes
  CHECK(EpochSubset(nodes, 1.0, 7, 5) == nodes);
  CHECK(EpochsPerSubsetCycle(0.1f) == 10);  // 1 / 0.1f is 9.99999985
  CHECK(EpochsPerSubsetCycle(0.3) == 3);
  const auto a = EpochSubset(nodes, 0.1, 7, 4);
  CHECK(a.size() == 34);  // [133, 167) of the cycle's order: 334 nodes in 10 slices of 33 or 34
  CHECK(EpochSubset(nodes, 0.1, 7, 1).size() == 33);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(a == EpochSubset(nodes, 0.1, 7, 4));
  CHECK(a != EpochSubset(nodes, 0.1, 8, 4));
  std::set<int64_t> cycle;
  for (uint64_t e = 10; e < 20; ++e) {
    for (int64_t v : EpochSubset(nodes, 0.1, 7, e)) CHECK(cycle.insert(v).second);
  }
  CHECK(cycle.size() == nodes.size());
  CHECK(EpochSubset(nodes, 1e-6, 7, 0).size() == 1);  // at least one node an epoch
  CHECK(EpochSubset(std::vector<int64_t>{}, 0.5, 7, 0).empty());
}

TEST_CASE("trainer: a non-finite loss stops training with an error, never a 'best' epoch") {
  auto s = MakeSynthetic(200, 4, 5);
  TrainOptions o = SmallOptions();
  o.epochs = 2;
  // An Inf in one feature row makes the loss NaN.
  const int64_t n = s->features->num_nodes(), dim = s->features->dim();
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  std::vector<float> x(static_cast<size_t>(n * dim));
  REQUIRE(s->features->Gather(all, x.data()).ok());
  x[static_cast<size_t>(s->data.train[0] * dim)] = std::numeric_limits<float>::infinity();
  s->features = std::move(sampler::InMemoryFeatures::FromMatrix(x, dim)).value();
  s->data.features = s->features.get();
  auto t = Trainer::Create(s->data, o);
  REQUIRE(t.ok());
  auto summary = (*t)->Run();
  REQUIRE_FALSE(summary.ok());
  CHECK(summary.status().message().find("epoch 0") != std::string::npos);
  CHECK(summary.status().message().find("--lr") != std::string::npos);
  // A non-finite learning rate is refused up front.
  o.optimizer.lr = std::numeric_limits<float>::infinity();
  CHECK_FALSE(Trainer::Create(s->data, o).ok());
}

TEST_CASE("trainer: rejects fanouts that do not match the layers") {
  auto s = MakeSynthetic(100, 4, 2);
  TrainOptions o = SmallOptions();
  o.fanouts = {5};
  auto t = Trainer::Create(s->data, o);
  CHECK(t.status().code() == StatusCode::kInvalidArgument);
  CHECK(t.status().message().find("one fanout per layer") != std::string::npos);
}

// Rewrites checkpoint `path` with its payload changed by `edit`, and a header (size, checksum)
// that matches the new payload.
template <typename Edit>
void RewritePayload(const std::string& path, Edit edit) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  REQUIRE(data.size() >= 32);
  std::string payload = data.substr(32);
  edit(&payload);
  const uint64_t size = payload.size();
  const uint64_t checksum = XXH64(payload.data(), payload.size(), 0);
  std::memcpy(data.data() + 16, &size, 8);
  std::memcpy(data.data() + 24, &checksum, 8);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data.substr(0, 32) << payload;
}

TEST_CASE("checkpoint: round trip, and damaged files are rejected with a clear error") {
  testing::TempDir dir;
  Checkpoint c;
  c.config_json = "{\"model\":\"sage\"}";
  c.epoch = 7;
  c.seed = 99;
  c.best_epoch = 5;
  c.best_valid_acc = 0.8;
  c.best_valid_loss = 0.625;
  c.best_test_acc = 0.75;
  c.parameters.push_back({"layer0.w", {2, 3}, {1, 2, 3, 4, 5, 6}});
  c.parameters.push_back({"layer0.b", {3}, {7, 8, 9}});
  c.optimizer_steps = 40;
  c.optimizer_state = {{0.5f, 0.25f}, {1.0f}};
  const std::string path = dir / "model.ckpt";
  REQUIRE(WriteCheckpoint(path, c).ok());
  auto r = ReadCheckpoint(path);
  REQUIRE(r.ok());
  CHECK(r->config_json == c.config_json);
  CHECK(r->epoch == 7);
  CHECK(r->seed == 99);
  CHECK(r->best_epoch == 5);
  CHECK(r->best_valid_acc == 0.8);
  CHECK(r->best_valid_loss == 0.625);
  CHECK(r->parameters.size() == 2);
  CHECK(r->parameters[0].name == "layer0.w");
  CHECK(r->parameters[0].shape == std::vector<int64_t>{2, 3});
  CHECK(r->parameters[1].values == std::vector<float>{7, 8, 9});
  CHECK(r->optimizer_steps == 40);
  CHECK(r->optimizer_state == c.optimizer_state);
  // No temporary file is left behind.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  CHECK(files == 1);

  SUBCASE("flipped payload byte") {
    FlipByte(path, 40);
    auto bad = ReadCheckpoint(path);
    CHECK(bad.status().code() == StatusCode::kCorruption);
    CHECK(bad.status().message().find("checksum mismatch") != std::string::npos);
    CHECK(bad.status().message().find(path) != std::string::npos);
  }
  SUBCASE("bad magic") {
    FlipByte(path, 0);
    CHECK(ReadCheckpoint(path).status().message().find("not a Skiff checkpoint") !=
          std::string::npos);
  }
  SUBCASE("truncated") {
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
    CHECK(ReadCheckpoint(path).status().message().find("truncated") != std::string::npos);
  }
  SUBCASE("missing") {
    CHECK(ReadCheckpoint(dir / "nope").status().code() == StatusCode::kNotFound);
  }
  // Payloads whose header and checksum agree, but whose contents do not parse.
  SUBCASE("payload ends inside a field") {
    RewritePayload(path, [](std::string* payload) { payload->resize(payload->size() - 3); });
    const Status status = ReadCheckpoint(path).status();
    CHECK(status.code() == StatusCode::kCorruption);
    CHECK(status.message().find("ends inside best metrics") != std::string::npos);
    // Before the (empty) best metrics, 8 bytes of length: the optimiser state's last bytes.
    RewritePayload(path, [](std::string* payload) { payload->resize(payload->size() - 8); });
    CHECK(ReadCheckpoint(path).status().message().find("ends inside optimizer state") !=
          std::string::npos);
  }
  SUBCASE("impossible parameter rank") {
    // The config string, six 8-byte scalars, the parameter count, the first name (8 + 8 bytes).
    const size_t rank_at = 8 + c.config_json.size() + 6 * 8 + 8 + 8 + 8;
    RewritePayload(path, [&](std::string* payload) {
      const uint64_t rank = 9;
      std::memcpy(payload->data() + rank_at, &rank, sizeof(rank));
    });
    CHECK(ReadCheckpoint(path).status().message().find("parameter layer0.w has rank 9") !=
          std::string::npos);
  }
  SUBCASE("trailing bytes") {
    RewritePayload(path, [](std::string* payload) { payload->push_back('x'); });
    CHECK(ReadCheckpoint(path).status().message().find("trailing bytes") != std::string::npos);
  }
}

TEST_CASE("trainer: the options a checkpoint saves come back as they were") {
  TrainOptions o;
  o.model.kind = model::ModelKind::kGat;
  o.model.in_dim = 7;
  o.model.hidden_dim = 24;
  o.model.num_classes = 5;
  o.model.num_layers = 3;
  o.model.dropout = 0.25f;
  o.model.input_dropout = 0.125f;
  o.model.heads = 2;
  o.model.activation = model::Activation::kElu;
  o.model.norm = model::Norm::kLayer;
  o.optimizer.kind = model::OptimizerKind::kSgd;
  o.optimizer.lr = 0.5f;
  o.optimizer.weight_decay = 0.0625f;
  o.optimizer.decay_scope = model::DecayScope::kFirstLayer;
  o.optimizer.momentum = 0.75f;
  o.fanouts = {4, 3, 2};
  o.eval_fanouts = {-1, 6, 5};
  o.batch_size = 17;
  o.eval_batch_size = 33;
  o.epochs = 9;
  o.seed = 123;
  o.feature_norm = FeatureNorm::kRow;
  auto back = TrainOptions::FromJson(o.ToJson());
  REQUIRE(back.ok());
  const TrainOptions& b = *back;
  CHECK(b.model.kind == o.model.kind);
  CHECK(b.model.in_dim == o.model.in_dim);
  CHECK(b.model.hidden_dim == o.model.hidden_dim);
  CHECK(b.model.num_classes == o.model.num_classes);
  CHECK(b.model.num_layers == o.model.num_layers);
  CHECK(b.model.dropout == o.model.dropout);
  CHECK(b.model.input_dropout == o.model.input_dropout);
  CHECK(b.model.heads == o.model.heads);
  CHECK(b.model.activation == o.model.activation);
  CHECK(b.model.norm == o.model.norm);
  CHECK(b.model.seed == o.seed);
  CHECK(b.optimizer.kind == o.optimizer.kind);
  CHECK(b.optimizer.lr == o.optimizer.lr);
  CHECK(b.optimizer.weight_decay == o.optimizer.weight_decay);
  CHECK(b.optimizer.decay_scope == o.optimizer.decay_scope);
  CHECK(b.optimizer.momentum == o.optimizer.momentum);
  CHECK(b.fanouts == o.fanouts);
  CHECK(b.eval_fanouts == o.eval_fanouts);
  CHECK(b.batch_size == o.batch_size);
  CHECK(b.eval_batch_size == o.eval_batch_size);
  CHECK(b.epochs == o.epochs);
  CHECK(b.seed == o.seed);
  CHECK(b.feature_norm == o.feature_norm);
  // A configuration saved before input_dropout was: the model's default ("same as dropout").
  std::string old = o.ToJson();
  const size_t at = old.find("\"input_dropout\":0.125,");
  REQUIRE(at != std::string::npos);
  old.erase(at, std::string("\"input_dropout\":0.125,").size());
  auto older = TrainOptions::FromJson(old);
  REQUIRE(older.ok());
  CHECK(older->model.input_dropout == -1.0f);
}

TEST_CASE("trainer: resume from a checkpoint reproduces the remaining epochs exactly") {
  cpu::SetNumThreads(2);
  auto s = MakeSynthetic(300, 6, 4);
  testing::TempDir dir;
  TrainOptions o = SmallOptions();
  o.epochs = 4;
  auto full = Trainer::Create(s->data, o);
  REQUIRE(full.ok());
  auto full_summary = (*full)->Run();
  REQUIRE(full_summary.ok());

  TrainOptions first = o;
  first.epochs = 2;
  auto part = Trainer::Create(s->data, first);
  REQUIRE(part.ok());
  REQUIRE((*part)->Run().ok());
  const std::string path = dir / "run.ckpt";
  REQUIRE(WriteCheckpoint(path, *(*part)->MakeCheckpoint(1)).ok());

  auto ckpt = ReadCheckpoint(path);
  REQUIRE(ckpt.ok());
  auto saved = TrainOptions::FromJson(ckpt->config_json);
  REQUIRE(saved.ok());
  CHECK(saved->fanouts == o.fanouts);
  saved->epochs = 4;
  saved->show_progress = false;
  saved->sampler_threads = 3;  // a different thread count must not matter
  auto resumed = Trainer::Create(s->data, *saved);
  REQUIRE(resumed.ok());
  REQUIRE((*resumed)->Restore(*ckpt).ok());
  auto rest = (*resumed)->Run();
  REQUIRE(rest.ok());
  REQUIRE(rest->epochs.size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(rest->epochs[i].epoch == full_summary->epochs[2 + i].epoch);
    CHECK(rest->epochs[i].loss == full_summary->epochs[2 + i].loss);
    CHECK(rest->epochs[i].valid_acc == full_summary->epochs[2 + i].valid_acc);
  }
  auto a = (*full)->model().Parameters();
  auto b = (*resumed)->model().Parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(std::memcmp(a[i].data, b[i].data, a[i].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("npy writer: files read back through the .npy reader") {
  testing::TempDir dir;
  std::vector<float> emb{1.5f, -2, 3, 4, 5, 6};
  REQUIRE(io::WriteNpy(dir / "e.npy", emb.data(), {3, 2}).ok());
  std::vector<int32_t> cls{4, 0, 2};
  REQUIRE(io::WriteNpy(dir / "c.npy", cls.data(), {3}).ok());
  CHECK(io::NpyHeaderBytes("<f4", {3, 2}).size() % 64 == 0);
  auto r = io::NpyReader::OpenFile(dir / "e.npy");
  REQUIRE(r.ok());
  CHECK((*r)->header().shape == std::vector<int64_t>{3, 2});
  std::vector<float> back(6);
  REQUIRE((*r)->ReadFloat(6, back.data()).ok());
  CHECK(back == emb);
  auto c = io::NpyReader::OpenFile(dir / "c.npy");
  REQUIRE(c.ok());
  CHECK((*c)->header().descr == "<i4");
  std::vector<int64_t> cb(3);
  REQUIRE((*c)->ReadInt64(3, cb.data()).ok());
  CHECK(cb == std::vector<int64_t>{4, 0, 2});
}

TEST_CASE("trainer: GCN on Cora reaches > 70% test accuracy") {
  const std::string datasets = testing::DatasetsDir();
  if (datasets.empty() || !std::filesystem::exists(datasets + "/cora.npz")) {
    MESSAGE("cora.npz not found; skipping");
    return;
  }
  testing::TempDir dir;
  convert::NpzGraphOptions c;
  c.input = datasets + "/cora.npz";
  c.output = dir / "cora";
  c.undirected = true;
  auto split = convert::ParseSplitSpec("per-class:20,30", 0);
  REQUIRE(split.ok());
  c.split = *split;
  REQUIRE(convert::ConvertNpzGraph(c).ok());
  auto ds = format::Dataset::Open(c.output);
  REQUIRE(ds.ok());
  auto data = LoadInMemory(**ds);
  REQUIRE(data.ok());
  cpu::SetNumThreads(2);
  TrainOptions o;
  o.model.kind = model::ModelKind::kGcn;
  o.model.num_layers = 2;
  o.model.hidden_dim = 64;
  o.fanouts = {-1, -1};
  o.eval_fanouts = {-1, -1};
  o.batch_size = 140;
  o.epochs = 15;
  o.show_progress = false;
  auto t = Trainer::Create((*data)->data, o);
  REQUIRE(t.ok());
  auto summary = (*t)->Run();
  REQUIRE(summary.ok());
  MESSAGE("best valid " << summary->best_valid_acc << ", test " << summary->best_test_acc);
  CHECK(summary->best_test_acc > 0.70);
}

TEST_CASE("trainer: the batch stream's pass report names the stage that bounds the pass") {
  train::EpochMetrics m;
  m.sample_seconds = 1.5;
  m.gather_seconds = 0.5;
  m.compute_seconds = 3.0;
  m.compute_wait_seconds = 0.1;  // compute barely waited: compute bounds
  std::string line = train::StreamPassReport(m, 4.0, 16, false);
  CHECK(line.find("training pass 4.00s") != std::string::npos);
  CHECK(line.find("sampling + gathering 2.00s busy (16 threads)") != std::string::npos);
  CHECK(line.find("compute 3.00s busy, waited 0.10s") != std::string::npos);
  CHECK(line.find("bound by compute") != std::string::npos);
  m.compute_wait_seconds = 1.0;  // a quarter of the pass waiting for batches: the stream bounds
  CHECK(train::StreamPassReport(m, 4.0, 16, false).find("bound by sampling + gathering") !=
        std::string::npos);
  // Sampled on the device: the stream only hands over seeds and labels.
  line = train::StreamPassReport(m, 4.0, 16, true);
  CHECK(line.find("bound by batch stream (seeds and labels)") != std::string::npos);
  m.compute_wait_seconds = 0;
  CHECK(train::StreamPassReport(m, 4.0, 16, true).find("bound by compute (the model's thread") !=
        std::string::npos);
}

TEST_CASE("train options: the largest fanout counts the default evaluation cap") {
  train::TrainOptions t;
  t.fanouts = {15, 10, 5};
  CHECK(t.LargestFanout() == train::kDefaultEvalFanoutCap);  // no evaluation fanouts given
  t.eval_fanouts = {20, -1, 3};
  CHECK(t.LargestFanout() == 20);
  t.fanouts = {-1, -1};
  t.eval_fanouts = {-1, -1};
  CHECK(t.LargestFanout() == -1);
}
