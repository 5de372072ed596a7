// NeighborSampler: multi-hop uniform neighbour sampling without replacement into a MiniBatch.
//
// Fanouts are given per layer, input layer first, as in DGL: with {15, 10, 5} every destination
// node of the last block (the seeds) has 5 sampled neighbours, every destination of the middle
// block 10 and every destination of the first block 15. A fanout of -1 takes every neighbour
// (full-neighbourhood mode, used for exact evaluation); a fanout >= degree also takes the whole
// row. Picks are uniform without replacement and are returned in row order.
//
// Each node is sampled once, when it first appears (in the spirit of MariusGNN's DENSE): it draws
// one uniformly *ordered* sample (Floyd's subset, then a shuffle) as long as the largest fanout
// below its degree among the blocks it is a destination of, and block l takes the first
// fanouts[l] of it (a uniform subset of that size). So a node's picks in a narrower block are a
// subset of its picks in a wider one, outer layers reuse the nodes of inner hops, and nodes are
// numbered by the hop where they first appear (seeds first): block l's destination nodes are the
// nodes of hops 0 .. L-1-l and its sources those of hops 0 .. L-l, so destinations are a prefix of
// sources (see train/minibatch.h). An earlier version gave a node the fanout of the hop where it
// first appeared in every layer (a seed had 5 neighbours in all three blocks); that cost 0.7 points
// of test accuracy against DGL on the 1M-node benchmark (BENCHMARKS.md).
//
// Determinism: the picks are a pure function of (graph, fanouts, seeds, rng_seed); use
// BatchSeed(seed, epoch, batch) for rng_seed so results do not depend on thread scheduling. Each
// node draws its sample from its own generator, NodeDrawRngFor(NodeDrawKey(rng_seed), node)
// (neighbor_draw.h), so its picks do not depend on the other nodes of the batch, and the device
// sampler (kernels/cuda/sample.cuh), which draws every node of a hop at once, samples the same
// batch.
//
// Thread safety: Sample is const and may be called from many threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"

namespace skiff::sampler {

class LocalIds;  // neighbor_sampler.cpp: the open-addressing node ID map

// Parses "15,10,5" (each >= 0, or -1 = all neighbours; 0 = none, so GraphSAGE sees only the
// node itself: an MLP baseline). InvalidArgument names the bad element.
Result<std::vector<int>> ParseFanouts(const std::string& text);
std::string FanoutsToString(const std::vector<int>& fanouts);

// A 64-bit seed mixed from a run seed and (stream, epoch, batch) with SplitMix64.
uint64_t BatchSeed(uint64_t seed, uint64_t stream, uint64_t epoch, uint64_t batch);

class NeighborSampler {
 public:
  // `graph` must outlive the sampler. fanouts.size() is the number of layers (>= 1). With
  // `record_degrees`, every block's src_degree holds GraphSource::Degree of its source nodes (one
  // more Degree call per node of the outermost hop; GCN needs the whole-graph degrees).
  NeighborSampler(const GraphSource& graph, std::vector<int> fanouts, bool record_degrees = false);

  const std::vector<int>& fanouts() const { return fanouts_; }
  int num_layers() const { return static_cast<int>(fanouts_.size()); }

  // Samples the neighbourhood of `seeds` (distinct node IDs) into *out (labels left empty).
  // InvalidArgument on an out-of-range or repeated seed; errors of the GraphSource pass through.
  Status Sample(std::span<const int64_t> seeds, uint64_t rng_seed, sampler::MiniBatch* out) const;
  // Samples several batches at once, hop by hop: hop h of every batch before hop h+1 of any
  // (GraphSource::BeginHop once per hop), so a source that reads a hop's lists in one batch
  // (pipeline::ResidentGraphSource) reads those of the whole group together. out[i] is exactly what
  // Sample(seeds[i], rng_seeds[i], out[i]) gives. The spans have equal lengths.
  Status SampleGroup(std::span<const std::span<const int64_t>> seeds,
                     std::span<const uint64_t> rng_seeds,
                     std::span<sampler::MiniBatch* const> out) const;

 private:
  struct BatchState;
  // Sampling one batch in steps: the seeds, each hop, then the recorded degrees. `local` maps the
  // batch's nodes so far to their local IDs.
  Status Begin(std::span<const int64_t> seeds, BatchState* state, sampler::MiniBatch* out,
               LocalIds* local) const;
  Status Hop(int hop, BatchState* state, sampler::MiniBatch* out, LocalIds* local) const;
  // Hop's steps: each node first expanded at `hop` records its degree and draws its ordered sample;
  // then the picks of destinations [0, end) of the hop's block, global IDs in CSR order, into
  // state->picks and block->indptr (the ID map then turns them into the block's local indices).
  void DrawSamples(int hop, BatchState* state, const std::vector<int64_t>& nodes) const;
  Status CollectPicks(int fanout, int64_t end, BatchState* state, const std::vector<int64_t>& nodes,
                      sampler::Block* block) const;
  Status Finish(BatchState* state, sampler::MiniBatch* out) const;

  const GraphSource& graph_;
  std::vector<int> fanouts_;
  bool record_degrees_ = false;
};

}  // namespace skiff::sampler
