// Layer-wise inference over the ranks of an owned-partition job: what PredictByLayer
// (train/layerwise_inference.h) computes in one process, each rank computing the nodes it owns.
//
// Layer l runs over every rank's own nodes in chunks of `chunk_nodes` destinations, the ranks in
// step (each takes as many chunks as the rank with the most own nodes, an empty one where it has
// none left): a chunk is a one-layer block sampled through the rank's ExchangeGraph (its own lists;
// the remote sources' degrees where the model records them), whose source rows come through an
// exchange -- the features for layer 0 (the rank's ExchangeFeatures), else the owners' outputs of
// layer l-1, which each rank holds for its own nodes only. Every node draws its sample at layer l
// from (seed, l, node) alone, as in one process, so the ranks compute one process's layers; rank 0
// receives every node's class and embedding (RowsToLead, after each chunk).
//
// Memory per rank: two (own nodes) x (widest hidden layer) float matrices and one chunk's block
// and rows, besides its sources; rank 0 also the outputs (as PredictByLayer's caller).
//
// Thread safety: the thread that drives the communicator; one call at a time per model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/model/model.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/status.h"
#include "skiff/train/layerwise_inference.h"
#include "skiff/train/node_ranges.h"

namespace skiff::train {

// A rank's view of the job: its exchange sources (ExchangeGraph, ExchangeFeatures) over `ranges`.
struct OwnedLayerwiseSources {
  const sampler::GraphSource* graph = nullptr;
  const sampler::FeatureSource* features = nullptr;
  const NodeRanges* ranges = nullptr;
  dist::Communicator* comm = nullptr;
};

// Collective: every rank calls it with the same options and `nodes` (distinct IDs of the graph).
// On rank 0, the predicted class and the final layer's input (EmbeddingDim wide) of every node
// of `nodes`, in that order; the other ranks' outputs are left empty. InvalidArgument and
// Unavailable as PredictByLayer; errors of the sources and the exchanges pass through.
Status PredictByLayerOwned(model::Model& model, const OwnedLayerwiseSources& sources,
                           const LayerwiseOptions& options, std::span<const int64_t> nodes,
                           std::vector<int32_t>* classes, std::vector<float>* embeddings);

}  // namespace skiff::train
