#include "skiff/train/layerwise_inference.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>

#include "kernels/cpu/gather.h"
#include "skiff/mutex.h"
#include "skiff/progress.h"
#include "skiff/sampler/neighbor_sampler.h"

namespace skiff::train {
namespace {

// One chunk of a layer: its one-layer sample (the chunk's nodes as seeds) and its source rows.
struct Chunk {
  sampler::MiniBatch batch;
  std::vector<float> rows;
};

// What a layer reads: the features (layer 0) or the previous layer's output, N x dim.
struct LayerInput {
  const sampler::FeatureSource* features = nullptr;
  const float* rows = nullptr;  // null: the features
  int64_t dim = 0;
};

// Samples chunk [begin, end) with `rng_seed` and gathers its source rows from `input`.
Status PrepareChunk(const sampler::NeighborSampler& sampler, const LayerInput& input,
                    uint64_t rng_seed, int64_t begin, int64_t end, Chunk* chunk) {
  std::vector<int64_t> seeds(static_cast<size_t>(end - begin));
  std::iota(seeds.begin(), seeds.end(), begin);
  SKIFF_RETURN_IF_ERROR(sampler.Sample(seeds, rng_seed, &chunk->batch));
  const std::vector<int64_t>& sources = chunk->batch.input_nodes;
  const auto count = static_cast<int64_t>(sources.size());
  chunk->rows.resize(static_cast<size_t>(count * input.dim));
  if (input.rows == nullptr) return input.features->Gather(sources, chunk->rows.data());
  cpu::GatherRows(input.rows, input.dim, sources.data(), count, chunk->rows.data());
  return Status::Ok();
}

// Where a layer's results go: a hidden layer's rows (N x its output width), or the last layer's
// class per node (argmax of the logits).
struct LayerOutput {
  std::vector<float>* rows = nullptr;
  std::vector<int32_t>* class_of = nullptr;
};

// Stores `count` rows of `width` floats at `bytes` (any alignment: an exchange's message) for the
// nodes begin .. begin + count - 1.
void StoreChunk(const char* bytes, int64_t begin, int64_t count, int64_t width,
                const LayerOutput& output) {
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(width);
  if (output.rows != nullptr) {
    std::memcpy(output.rows->data() + begin * width, bytes, row_bytes * static_cast<size_t>(count));
    return;
  }
  std::vector<float> logits(static_cast<size_t>(width));
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(logits.data(), bytes + static_cast<size_t>(i) * row_bytes, row_bytes);
    (*output.class_of)[static_cast<size_t>(begin + i)] =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
}

// The chunks of a layer and who computes which: round k's chunks are k * ranks .. k * ranks +
// ranks - 1, rank r computing the r-th (one process: a round is a chunk).
struct ChunkTurns {
  int64_t nodes = 0, chunk_nodes = 0, chunks = 0;
  int ranks = 1, rank = 0;

  int64_t rounds() const { return (chunks + ranks - 1) / ranks; }
  int64_t begin(int64_t c) const { return std::min(nodes, c * chunk_nodes); }
  int64_t end(int64_t c) const { return std::min(nodes, (c + 1) * chunk_nodes); }
};

// Stores round `k`'s outputs: this process's `out` alone, or every rank's, all-gathered.
Status StoreRound(const ChunkTurns& turns, int64_t k, const std::vector<float>& out, int64_t width,
                  const LayerOutput& output, dist::Communicator* comm, OptionalProgress* progress) {
  const auto* own = reinterpret_cast<const char*>(out.data());
  if (turns.ranks == 1) {
    StoreChunk(own, turns.begin(k), turns.end(k) - turns.begin(k), width, output);
    progress->Add(static_cast<uint64_t>(turns.end(k) - turns.begin(k)));
    return Status::Ok();
  }
  const int64_t c = k * turns.ranks + turns.rank;
  const size_t bytes = sizeof(float) * static_cast<size_t>((turns.end(c) - turns.begin(c)) * width);
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                         comm->AllGather(std::string_view(own, bytes), "layer-wise rows"));
  for (int q = 0; q < turns.ranks; ++q) {
    const int64_t cq = k * turns.ranks + q, count = turns.end(cq) - turns.begin(cq);
    const std::string& part = all[static_cast<size_t>(q)];
    if (part.size() != sizeof(float) * static_cast<size_t>(count * width)) {
      return Status::Internal("layer-wise rows: rank " + std::to_string(q) + " sent " +
                              std::to_string(part.size()) + " bytes for chunk " +
                              std::to_string(cq) + " of " + std::to_string(count) + " rows");
    }
    StoreChunk(part.data(), turns.begin(cq), count, width, output);
    progress->Add(static_cast<uint64_t>(count));
  }
  return Status::Ok();
}

// Prepares a layer's chunks in order on one thread of its own -- the sampler keeps its node ID map
// per thread, and a fresh thread per chunk would build that map (4 bytes per graph node) anew each
// time -- at most one chunk ahead of the one being computed (two slots).
class ChunkProducer {
 public:
  using PrepareFn = std::function<Status(int64_t c, Chunk* chunk)>;
  ChunkProducer(int64_t chunks, PrepareFn prepare)
      : chunks_(chunks), prepare_(std::move(prepare)), thread_([this] { Produce(); }) {}
  ~ChunkProducer() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    changed_.SignalAll();
    thread_.join();
  }
  ChunkProducer(const ChunkProducer&) = delete;
  ChunkProducer& operator=(const ChunkProducer&) = delete;

  // Waits for chunk `c` (taken in order) and returns it, or the error preparing it.
  Result<Chunk*> Take(int64_t c) {
    MutexLock lock(&mu_);
    while (prepared_ < c && error_.ok()) changed_.Wait(&mu_);
    if (!error_.ok()) return error_;
    return &slots_[c % 2];
  }
  // Hands chunk `c`'s slot back for chunk c + 2.
  void Release(int64_t c) {
    {
      MutexLock lock(&mu_);
      released_ = c;
    }
    changed_.SignalAll();
  }

 private:
  void Produce() {
    for (int64_t c = 0; c < chunks_; ++c) {
      {
        MutexLock lock(&mu_);
        while (c - released_ > 2 && !stopping_) changed_.Wait(&mu_);
        if (stopping_) return;
      }
      const Status st = prepare_(c, &slots_[c % 2]);
      {
        MutexLock lock(&mu_);
        if (!st.ok()) error_ = st;
        prepared_ = c;
      }
      changed_.SignalAll();
      if (!st.ok()) return;
    }
  }

  const int64_t chunks_;
  const PrepareFn prepare_;
  Chunk slots_[2];
  Mutex mu_;
  CondVar changed_;
  int64_t prepared_ SKIFF_GUARDED_BY(mu_) = -1;  // the last chunk prepared
  int64_t released_ SKIFF_GUARDED_BY(mu_) = -1;  // the last chunk handed back
  Status error_ SKIFF_GUARDED_BY(mu_);
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the rest is initialised
};

// Runs layer `l` over every node, chunk by chunk (with options.comm, this rank's turns, storing
// every rank's), the next chunk sampled and gathered on the producer's thread while the model
// computes this one.
Status RunLayer(model::Model& model, const sampler::GraphSource& graph,
                const LayerwiseOptions& options, int l, const LayerInput& input,
                const LayerOutput& output, OptionalProgress* progress) {
  const sampler::NeighborSampler sampler(graph, {options.fanouts[static_cast<size_t>(l)]},
                                         model::NeedsNodeDegrees(model.config().kind));
  ChunkTurns turns{.nodes = graph.num_nodes(), .chunk_nodes = options.chunk_nodes};
  turns.chunks = (turns.nodes + turns.chunk_nodes - 1) / turns.chunk_nodes;
  if (options.comm != nullptr) {
    turns.ranks = options.comm->size();
    turns.rank = options.comm->rank();
  }
  const int64_t width = model.LayerOutputDim(l);
  // One sampler seed for the layer: a node's picks depend on it and the node alone
  // (neighbor_sampler.h), not on the chunk the node falls in.
  const uint64_t seed =
      sampler::BatchSeed(options.seed, kLayerwiseStream, static_cast<uint64_t>(l), 0);
  const int64_t rounds = turns.rounds();
  ChunkProducer producer(rounds, [&](int64_t k, Chunk* chunk) {
    const int64_t c = k * turns.ranks + turns.rank;  // past the last: empty
    if (turns.begin(c) == turns.end(c)) {
      chunk->batch = sampler::MiniBatch();
      return Status::Ok();
    }
    return PrepareChunk(sampler, input, seed, turns.begin(c), turns.end(c), chunk);
  });
  std::vector<float> out;
  for (int64_t k = 0; k < rounds; ++k) {
    SKIFF_ASSIGN_OR_RETURN(Chunk * chunk, producer.Take(k));
    out.clear();
    if (!chunk->batch.seeds.empty()) {
      SKIFF_RETURN_IF_ERROR(
          model.ForwardLayer(l, chunk->batch.blocks[0], chunk->rows.data(), &out));
    }
    producer.Release(k);
    SKIFF_RETURN_IF_ERROR(StoreRound(turns, k, out, width, output, options.comm, progress));
  }
  return Status::Ok();
}

// Reorders N rows of `dim` floats in place so that row i becomes the former row nodes[i]
// (`nodes`: a permutation of [0, N)), following the permutation's cycles with one row of scratch.
void PermuteRows(std::span<const int64_t> nodes, int64_t dim, std::vector<float>* rows) {
  const auto n = static_cast<int64_t>(nodes.size());
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(dim);
  auto row = [&](int64_t i) { return rows->data() + i * dim; };
  std::vector<bool> done(static_cast<size_t>(n), false);
  std::vector<float> first(static_cast<size_t>(dim));
  for (int64_t start = 0; start < n; ++start) {
    if (done[static_cast<size_t>(start)]) continue;
    std::memcpy(first.data(), row(start), row_bytes);
    for (int64_t j = start;;) {
      done[static_cast<size_t>(j)] = true;
      const int64_t from = nodes[static_cast<size_t>(j)];
      if (from == start) {
        std::memcpy(row(j), first.data(), row_bytes);
        break;
      }
      std::memcpy(row(j), row(from), row_bytes);
      j = from;
    }
  }
}

// The embeddings of `nodes` in their order: the final layer's input `last_input` (N x dim, taken),
// or with one layer the features.
Status EmbeddingsOf(std::span<const int64_t> nodes, const sampler::FeatureSource& features,
                    int num_layers, int64_t dim, std::vector<float>* last_input,
                    std::vector<float>* embeddings) {
  if (num_layers == 1) {
    embeddings->resize(nodes.size() * static_cast<size_t>(dim));
    return features.Gather(nodes, embeddings->data());
  }
  if (static_cast<int64_t>(nodes.size()) == features.num_nodes()) {  // a permutation
    PermuteRows(nodes, dim, last_input);
    *embeddings = std::move(*last_input);
    return Status::Ok();
  }
  embeddings->resize(nodes.size() * static_cast<size_t>(dim));
  cpu::GatherRows(last_input->data(), dim, nodes.data(), static_cast<int64_t>(nodes.size()),
                  embeddings->data());
  return Status::Ok();
}

}  // namespace

Status CheckLayerwiseArguments(const model::Model& model, int64_t num_nodes, int64_t feature_dim,
                               const LayerwiseOptions& options, std::span<const int64_t> nodes) {
  const model::ModelConfig& config = model.config();
  if (!model.runs_by_layer()) {
    return Status::Unavailable(std::string("layer-wise inference: the ") +
                               model::ModelKindName(config.kind) +
                               " model on this device does not run layer by layer");
  }
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("layer-wise inference: " + what);
  };
  if (static_cast<int>(options.fanouts.size()) != config.num_layers) {
    return bad(std::to_string(options.fanouts.size()) + " fanouts for a model of " +
               std::to_string(config.num_layers) + " layers");
  }
  if (options.chunk_nodes <= 0) return bad("the chunk size must be positive");
  if (feature_dim != config.in_dim) {
    return bad("features of width " + std::to_string(feature_dim) + " for a model of input width " +
               std::to_string(config.in_dim));
  }
  std::vector<bool> seen(static_cast<size_t>(num_nodes), false);
  for (const int64_t v : nodes) {
    if (v < 0 || v >= num_nodes || seen[static_cast<size_t>(v)]) {
      return bad("node " + std::to_string(v) +
                 (v < 0 || v >= num_nodes ? " is not in the graph" : " is asked for twice"));
    }
    seen[static_cast<size_t>(v)] = true;
  }
  return Status::Ok();
}

Status PredictByLayer(model::Model& model, const sampler::GraphSource& graph,
                      const sampler::FeatureSource& features, const LayerwiseOptions& options,
                      std::span<const int64_t> nodes, std::vector<int32_t>* classes,
                      std::vector<float>* embeddings) {
  if (features.num_nodes() != graph.num_nodes()) {
    return Status::InvalidArgument("layer-wise inference: features of " +
                                   std::to_string(features.num_nodes()) + " nodes for a graph of " +
                                   std::to_string(graph.num_nodes()));
  }
  SKIFF_RETURN_IF_ERROR(
      CheckLayerwiseArguments(model, graph.num_nodes(), features.dim(), options, nodes));
  const int num_layers = model.config().num_layers;
  const int64_t n = graph.num_nodes();
  // Rows: one per node and layer.
  OptionalProgress progress(options.show_progress,
                            "predict (" + std::to_string(num_layers) + " layers)",
                            static_cast<uint64_t>(n) * num_layers, "rows");
  std::vector<float> input, output;  // the previous layer's output and this one's
  std::vector<int32_t> class_of(static_cast<size_t>(n), -1);
  for (int l = 0; l < num_layers; ++l) {
    const bool last = l == num_layers - 1;
    const LayerInput in{&features, l == 0 ? nullptr : input.data(), model.LayerInputDim(l)};
    if (!last) output.resize(static_cast<size_t>(n * model.LayerOutputDim(l)));
    const LayerOutput out{last ? nullptr : &output, last ? &class_of : nullptr};
    SKIFF_RETURN_IF_ERROR(RunLayer(model, graph, options, l, in, out, &progress));
    if (!last) std::swap(input, output);
  }
  progress.Finish();
  std::vector<float>().swap(output);
  classes->resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) (*classes)[i] = class_of[static_cast<size_t>(nodes[i])];
  return EmbeddingsOf(nodes, features, num_layers, model.EmbeddingDim(), &input, embeddings);
}

}  // namespace skiff::train
