// A sampled mini-batch: the multi-hop neighbourhood of a set of seed nodes as per-layer bipartite
// CSR blocks with local IDs (the layout the kernels in kernels/cpu and kernels/cuda consume).
//
// Local ID convention (as in DGL's message-flow graphs): `input_nodes` lists the global IDs of
// every node whose features the first layer reads. Layer l's block maps `num_src` source rows to
// `num_dst` destination rows, and the destination nodes of every block are a *prefix* of its source
// nodes (a node's own previous-layer representation is row d of the source matrix). So block 0 has
// num_src == input_nodes.size(), block l+1 has num_src == block l's num_dst, and the last block's
// num_dst == seeds.size(), with seeds == input_nodes[0 .. seeds.size()).
//
// Thread safety: a value type; built by one sampler thread, then read-only.
#pragma once

#include <cstdint>
#include <vector>

namespace skiff::sampler {

struct Block {
  // A condensed block keeps its sizes only (indptr, indices and src_degree empty). Only block 0
  // of a batch whose first layer's input was aggregated before the model saw it is condensed
  // (pipeline::CondenseAggregated): the model then needs block 0's destination count alone.
  int64_t num_dst = 0;
  int64_t num_src = 0;
  std::vector<int64_t> indptr;   // size num_dst + 1
  std::vector<int32_t> indices;  // size indptr[num_dst]; local source IDs in [0, num_src)
  // Degree of each source node in the whole graph (size num_src), filled only when the sampler
  // records degrees (GCN's normalisation needs them); empty otherwise. Row d's sampled edge count
  // indptr[d+1]-indptr[d] is <= src_degree[d] (destinations are a prefix of sources).
  std::vector<int64_t> src_degree;

  int64_t num_edges() const { return indptr.empty() ? 0 : indptr.back(); }
  bool condensed() const { return indptr.empty(); }
  // src_degree's data, or nullptr when the sampler did not record degrees (the form
  // cpu::GcnEdgeWeights takes).
  const int64_t* src_degree_or_null() const {
    return src_degree.empty() ? nullptr : src_degree.data();
  }
};

struct MiniBatch {
  // Global IDs; seeds are the prefix. When block 0 is condensed, only its destinations.
  std::vector<int64_t> input_nodes;
  std::vector<int64_t> seeds;   // global IDs of the nodes whose labels the loss uses
  std::vector<Block> blocks;    // outermost (input) layer first; blocks.size() == num layers
  std::vector<int32_t> labels;  // labels of seeds (filled by the trainer), -1 = unlabelled
};

}  // namespace skiff::sampler
