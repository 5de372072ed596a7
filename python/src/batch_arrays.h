// The arrays a Python batch is made of, from a sampled MiniBatch (sampler/minibatch.h).
//
// PyG's edge_index: one graph over the batch's nodes (n_id = input_nodes, seeds first), row 0 the
// source and row 1 the target of each edge, holding each node's sampled neighbours once -- from the
// block where the node is expanded: a node first reached at hop h (seeds: hop 0) is a destination
// of blocks 0 .. L-1-h and draws its sample for block L-1-h, whose picks are those of its hop's
// fanout (the wider blocks' picks of it are supersets, for layer-wise models). So the graph is what
// PyG's NeighborLoader samples for num_neighbors = [fanouts[L-1], ..., fanouts[0]]: seed edges
// first, then each hop's.
//
// A block's edge_index: the same convention over the block's local IDs (sources [0, num_src),
// destinations [0, num_dst), a prefix of the sources).
//
// A link batch's supervision, in the conventions of PyG's LinkNeighborLoader, over positions in
// n_id (a link batch's seeds are the first nodes of n_id, so the rows of its train::EdgeBatch are
// such positions): edge_label_index lists the batch's pairs, then, in binary mode, negative pairs
// (source i, negative j), j-major -- every pair's source with the first shared negative, then with
// the second, ... --, the first `negative_pairs` of them; edge_label has each pair's label and 0
// for every negative pair; input_id the pairs' indices in the loader's pairs; neg_index the shared
// negatives' positions (triplet mode: every pair's negatives).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/sampler/minibatch.h"
#include "skiff/train/link_batches.h"

namespace skiff::python {

// 2 x E, row-major (all sources, then all targets). `hop_edges` (when given): the edges of each
// hop, seeds' first (PyG's num_sampled_edges).
std::vector<int64_t> PygEdgeIndex(const sampler::MiniBatch& batch,
                                  std::vector<int64_t>* hop_edges = nullptr);
// The nodes first reached at each hop, the seeds first (PyG's num_sampled_nodes).
std::vector<int64_t> HopNodes(const sampler::MiniBatch& batch);
std::vector<int64_t> BlockEdgeIndex(const sampler::Block& block);

struct LinkLabelArrays {
  std::vector<int64_t> edge_label_index;  // 2 x L, row-major
  std::vector<float> edge_label;          // L
  std::vector<int64_t> input_id;          // per pair of the batch
  std::vector<int64_t> neg_index;         // per shared negative
  uint64_t bytes() const;                 // what the vectors hold
};
// `pair_ids`: the batch's pairs (indices into `pair_labels`); `negative_pairs` <= pairs x
// negatives.
LinkLabelArrays MakeLinkLabels(const train::EdgeBatch& edges, std::span<const int64_t> pair_ids,
                               std::span<const float> pair_labels, int64_t negative_pairs);

}  // namespace skiff::python
