#include "skiff/train/owned_layerwise.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "skiff/progress.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/exchange_features.h"
#include "skiff/train/gather_rows.h"
#include "skiff/train/owned_rows.h"

namespace skiff::train {
namespace {

// A layer's output for the rank's own nodes, as the rows an ExchangeFeatures serves: rows only,
// no lists (nothing samples from it).
class LayerRows final : public OwnedRows {
 public:
  LayerRows(int64_t begin, int64_t end, const std::vector<float>& rows, int64_t dim)
      : begin_(begin), end_(end), rows_(rows), dim_(dim) {}
  int64_t begin() const override { return begin_; }
  int64_t end() const override { return end_; }
  int64_t feature_dim() const override { return dim_; }
  int64_t Degree(int64_t) const override { return NoLists(); }
  bool ListInMemory(int64_t) const override { return NoLists() == 0; }
  void NeighborsAt(int64_t, std::span<const int64_t>, int64_t*) const override { NoLists(); }
  Status Lists(std::span<const int64_t>, std::vector<int64_t>*,
               std::vector<int64_t>*) const override {
    NoLists();
    return Status::Ok();
  }
  Status RowsTo(std::span<const int64_t> nodes, std::span<float* const> dst) const override {
    const size_t row = sizeof(float) * static_cast<size_t>(dim_);
    for (size_t i = 0; i < nodes.size(); ++i) {
      SKIFF_CHECK(Owns(nodes[i]));
      std::memcpy(dst[i], rows_.data() + (nodes[i] - begin_) * dim_, row);
    }
    return Status::Ok();
  }
  void NormalizeRows() override { NoLists(); }

 private:
  static int64_t NoLists() {
    SKIFF_CHECK_MSG(false, "a layer's rows are only read row by row");
    return 0;
  }
  const int64_t begin_, end_;
  const std::vector<float>& rows_;
  const int64_t dim_;
};

// The rank's own nodes and the chunks every rank takes per layer (the most any rank needs).
struct OwnChunks {
  int64_t begin = 0, end = 0, size = 0, count = 0;
  // Chunk c's own nodes [first, last): empty past this rank's end.
  int64_t first(int64_t c) const { return std::min(end, begin + c * size); }
  int64_t last(int64_t c) const { return std::min(end, begin + (c + 1) * size); }
};

OwnChunks ChunksOf(const NodeRanges& ranges, int rank, int64_t size) {
  OwnChunks chunks{.begin = ranges.begin(rank), .end = ranges.end(rank), .size = size};
  for (int r = 0; r < ranges.size(); ++r) {
    chunks.count = std::max(chunks.count, (ranges.end(r) - ranges.begin(r) + size - 1) / size);
  }
  return chunks;
}

// What one layer reads and writes: its input rows (layer 0: `features`), and the rank's own rows
// of its output (hidden layers) or own nodes' classes (the last).
struct LayerIo {
  const sampler::FeatureSource* input = nullptr;
  int64_t input_dim = 0;
  std::vector<float>* rows = nullptr;
  std::vector<int32_t>* classes = nullptr;
};

// Layer `l` over the rank's own nodes, chunk by chunk in step with the other ranks.
Status RunOwnedLayer(model::Model& model, const OwnedLayerwiseSources& s,
                     const LayerwiseOptions& options, int l, const OwnChunks& chunks,
                     const LayerIo& io, OptionalProgress* progress) {
  const sampler::NeighborSampler sampler(*s.graph, {options.fanouts[static_cast<size_t>(l)]},
                                         model::NeedsNodeDegrees(model.config().kind));
  // The seed of PredictByLayer's layer l: a node's picks depend on it and the node alone.
  const uint64_t seed =
      sampler::BatchSeed(options.seed, kLayerwiseStream, static_cast<uint64_t>(l), 0);
  const int64_t width = model.LayerOutputDim(l);
  sampler::MiniBatch batch;
  std::vector<int64_t> seeds;
  std::vector<float> rows, out;
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t first = chunks.first(c), count = chunks.last(c) - first;
    seeds.resize(static_cast<size_t>(count));
    std::iota(seeds.begin(), seeds.end(), first);
    SKIFF_RETURN_IF_ERROR(sampler.Sample(seeds, seed, &batch));
    rows.resize(batch.input_nodes.size() * static_cast<size_t>(io.input_dim));
    SKIFF_RETURN_IF_ERROR(io.input->Gather(batch.input_nodes, rows.data()));
    if (count == 0) continue;  // its exchanges done, for the other ranks
    SKIFF_RETURN_IF_ERROR(model.ForwardLayer(l, batch.blocks[0], rows.data(), &out));
    const int64_t at = first - chunks.begin;
    if (io.rows != nullptr) {
      std::memcpy(io.rows->data() + at * width, out.data(), sizeof(float) * count * width);
    } else {
      for (int64_t i = 0; i < count; ++i) {
        const float* logits = out.data() + i * width;
        (*io.classes)[static_cast<size_t>(at + i)] =
            static_cast<int32_t>(std::max_element(logits, logits + width) - logits);
      }
    }
    progress->Add(static_cast<uint64_t>(count));
  }
  return Status::Ok();
}

// Every own node's class and embedding (`last_input`, own x dim; with one layer the features,
// gathered here) to rank 0 at its position in `nodes`, a chunk per send.
Status SendRows(const OwnedLayerwiseSources& s, const OwnChunks& chunks,
                std::span<const int64_t> nodes, int num_layers, int64_t dim,
                const std::vector<int32_t>& classes, const std::vector<float>& last_input,
                std::vector<int32_t>* out_classes, std::vector<float>* out_embeddings) {
  std::vector<int64_t> position(static_cast<size_t>(s.graph->num_nodes()), -1);
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = static_cast<int64_t>(i);
  RowsToLead rows(*s.comm, static_cast<int64_t>(nodes.size()), dim, out_classes, out_embeddings);
  std::vector<int64_t> own;
  std::vector<float> features;
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t first = chunks.first(c), count = chunks.last(c) - first;
    const float* embedding = nullptr;
    if (num_layers > 1) {
      embedding = last_input.data() + (first - chunks.begin) * dim;
    } else {
      own.resize(static_cast<size_t>(count));
      std::iota(own.begin(), own.end(), first);
      features.resize(static_cast<size_t>(count * dim));
      SKIFF_RETURN_IF_ERROR(s.features->Gather(own, features.data()));
      embedding = features.data();
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t at = position[static_cast<size_t>(first + i)];
      if (at < 0) continue;
      SKIFF_RETURN_IF_ERROR(
          rows.Add(at, classes[static_cast<size_t>(first - chunks.begin + i)],
                   std::span<const float>(embedding + i * dim, static_cast<size_t>(dim))));
    }
    SKIFF_RETURN_IF_ERROR(rows.Send());
  }
  return rows.Finish();
}

}  // namespace

Status PredictByLayerOwned(model::Model& model, const OwnedLayerwiseSources& sources,
                           const LayerwiseOptions& options, std::span<const int64_t> nodes,
                           std::vector<int32_t>* classes, std::vector<float>* embeddings) {
  SKIFF_RETURN_IF_ERROR(CheckLayerwiseArguments(model, sources.graph->num_nodes(),
                                                sources.features->dim(), options, nodes));
  const int rank = sources.comm->rank();
  const OwnChunks chunks = ChunksOf(*sources.ranges, rank, options.chunk_nodes);
  const int64_t own = chunks.end - chunks.begin;
  const int num_layers = model.config().num_layers;
  OptionalProgress progress(options.show_progress,
                            "predict (" + std::to_string(num_layers) + " layers, rank " +
                                std::to_string(rank) + "'s nodes)",
                            static_cast<uint64_t>(own) * num_layers, "rows");
  std::vector<float> input, output;  // the previous layer's own rows and this one's
  std::vector<int32_t> own_classes(static_cast<size_t>(own), -1);
  for (int l = 0; l < num_layers; ++l) {
    const bool last = l == num_layers - 1;
    const LayerRows previous(chunks.begin, chunks.end, input, model.LayerInputDim(l));
    const ExchangeFeatures previous_rows(*sources.ranges, sources.comm, &previous);
    if (!last) output.assign(static_cast<size_t>(own * model.LayerOutputDim(l)), 0.0f);
    const LayerIo io{.input = l == 0 ? sources.features : &previous_rows,
                     .input_dim = model.LayerInputDim(l),
                     .rows = last ? nullptr : &output,
                     .classes = last ? &own_classes : nullptr};
    SKIFF_RETURN_IF_ERROR(RunOwnedLayer(model, sources, options, l, chunks, io, &progress));
    if (!last) std::swap(input, output);
  }
  progress.Finish();
  std::vector<float>().swap(output);
  return SendRows(sources, chunks, nodes, num_layers, model.EmbeddingDim(), own_classes, input,
                  classes, embeddings);
}

}  // namespace skiff::train
