// Layer-wise inference: the predictions and embeddings of every node of a graph, computed one layer
// at a time over all nodes instead of one sampled neighbourhood per batch of seeds.
//
// A batch's L-hop neighbourhood at evaluation fanouts (100 per layer by default) covers a large
// part of the graph, so predicting every node batch by batch computes the same inner nodes again
// for every batch that reaches them: on the 1m preset a 76-seed batch's neighbourhood is a third
// of the graph (BENCHMARKS.md, "Prediction over every node"). Here each node's representation at
// each layer is computed once: layer l runs over all nodes in chunks of `chunk_nodes`
// destinations, each chunk a one-layer block whose sources are the chunk and its neighbours
// sampled at fanouts[l] (sampler::NeighborSampler with that one fanout; every neighbour at -1),
// reading the sources' rows from the previous layer's output (the features for layer 0). Work per
// layer is one pass over the sampled edges and one dense product per node.
//
// What is computed: with every neighbour (fanouts of -1) exactly what Model::Forward computes for
// any batch, up to the order of floating-point sums. With sampled fanouts, each node aggregates a
// uniform sample of its neighbours at each layer, as in a batch; the samples differ from any one
// batch's (a batch samples a node once for all the blocks it appears in, here once per layer).
// Deterministic: layer l's sampler seed is sampler::BatchSeed(seed, kLayerwiseStream, l, 0) for
// every chunk, so a node's picks at layer l depend on (seed, l, node) alone -- not on the chunk
// size -- and nothing depends on the thread count but the order of the dense products' sums.
//
// Shared among ranks (LayerwiseOptions::comm: ranks that each hold the whole graph and features, as
// replicated data-parallel ranks do): the ranks take a layer's chunks in turns -- round k, rank r
// computes chunk k * W + r, an empty one past the last -- and after each round all-gather the
// round's outputs, so that every rank ends each layer holding every node's rows, and computes a
// W-th of the work. The chunks are one process's, so the results are one process's.
//
// Memory: two N x (widest hidden layer) float matrices (the layer being read and the one being
// written) and one chunk's block and rows, besides the graph and features -- which must be in
// memory for speed (any GraphSource/FeatureSource works; a disk-backed one reads row by row).
// The model must run layer by layer (Model::runs_by_layer: the CPU model).
//
// Thread safety: one call at a time per model; the sources are only read.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/model/model.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/status.h"

namespace skiff::train {

// The random stream of layer-wise inference's sampler seeds (the Trainer's streams are 1-5).
inline constexpr uint64_t kLayerwiseStream = 6;

struct LayerwiseOptions {
  std::vector<int> fanouts;    // per layer, input layer first; -1 = every neighbour
  int64_t chunk_nodes = 4096;  // destination nodes per block (> 0)
  uint64_t seed = 0;
  bool show_progress = false;  // a "predict (L layers)" progress line, one row per node and layer
  // The ranks sharing the work (see above); null: this process alone. Not owned.
  dist::Communicator* comm = nullptr;
};

// The arguments PredictByLayer checks (and PredictByLayerOwned, train/owned_layerwise.h), for a
// graph of `num_nodes` nodes whose features are `feature_dim` wide: Unavailable unless
// model.runs_by_layer(); InvalidArgument for a fanout count other than the model's layers, a chunk
// size <= 0, features of another width than the model's input, or a node of `nodes` out of range
// or repeated.
Status CheckLayerwiseArguments(const model::Model& model, int64_t num_nodes, int64_t feature_dim,
                               const LayerwiseOptions& options, std::span<const int64_t> nodes);

// Predicted class (argmax of the logits) and final-layer input embedding (EmbeddingDim wide) of
// every node in `nodes` (distinct IDs of the graph), in the order of `nodes`, computed layer by
// layer over the whole graph. InvalidArgument for options that do not fit the model (fanout count,
// feature width, chunk size), an ID out of range or repeated; Unavailable unless
// model.runs_by_layer(); errors of the sources pass through. With options.comm, a collective: every
// rank calls it with the same options and sources of the same dataset, each asking for the nodes
// it wants results for (a rank may ask for none), and the exchanges' errors pass through.
Status PredictByLayer(model::Model& model, const sampler::GraphSource& graph,
                      const sampler::FeatureSource& features, const LayerwiseOptions& options,
                      std::span<const int64_t> nodes, std::vector<int32_t>* classes,
                      std::vector<float>* embeddings);

}  // namespace skiff::train
