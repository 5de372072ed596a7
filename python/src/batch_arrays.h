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
#pragma once

#include <cstdint>
#include <vector>

#include "skiff/sampler/minibatch.h"

namespace skiff::python {

// 2 x E, row-major (all sources, then all targets). `hop_edges` (when given): the edges of each
// hop, seeds' first (PyG's num_sampled_edges).
std::vector<int64_t> PygEdgeIndex(const sampler::MiniBatch& batch,
                                  std::vector<int64_t>* hop_edges = nullptr);
// The nodes first reached at each hop, the seeds first (PyG's num_sampled_nodes).
std::vector<int64_t> HopNodes(const sampler::MiniBatch& batch);
std::vector<int64_t> BlockEdgeIndex(const sampler::Block& block);

}  // namespace skiff::python
