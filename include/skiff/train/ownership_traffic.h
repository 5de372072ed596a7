// Ownership traffic: how much of one training epoch's sampling and feature gathering would cross
// ranks if each rank of a W-rank job owned only part of the graph (Armada's owned partitions,
// issue #48), measured by sampling the epoch's batches rather than estimated from the edge cut.
//
// An ownership model gives each node an owning rank, which stores the node's adjacency list and
// its feature row:
//   - PartitionOwners: the dataset's partitions (partition order: partition p is the node IDs
//     [boundaries[p], boundaries[p+1])) in contiguous ranges, one range per rank, the ranges cut
//     where the training nodes are closest to balanced (the owned-partition design of #48);
//   - RandomOwners: every node on a uniformly random rank (a hash of a seed and the node ID), the
//     baseline that ignores the graph.
//
// Which rank trains which seeds (SeedRule) is the same for both models, so they are compared on
// equal terms:
//   - kOwned (the owned-partition design): each rank trains the training seeds it owns. Rank r's
//     batches are the one-process plan's batches (PlanBatches with the trainer's seed and epoch)
//     restricted to the seeds r owns, each keeping its one-process batch number, so every node of
//     them draws the neighbours the one-process batch draws for it (per-node random streams,
//     neighbor_sampler.h); a step of the job is one plan batch, split among the ranks.
//   - kRoundRobin (replicated data, `skiff train --distributed` today): rank r takes plan batches
//     r, r + W, ... whole (ShardBatches), whoever owns their seeds.
//
// For each batch a rank samples, a sampled neighbour (an edge of one of the batch's blocks) is
// remote when the rank does not own its destination node: the adjacency list it was drawn from
// lives on another rank. An input row (MiniBatch::input_nodes, the rows the first layer reads) is
// remote when the rank does not own the node. Rows are counted per batch: nothing is cached from
// one batch to the next, and a node that appears in two of a rank's batches is fetched twice.
//
// Bytes (what the owner would send): for each remote node a batch expands, its sampled neighbour
// IDs as int64 (8 bytes each; the node's picks are drawn once and each block takes a prefix of
// them, so a node's picks are its longest row among the blocks) plus one int64 for its row length
// (the offsets array's entry type); for each remote input row, the row at `feature_row_bytes`.
// Requests (8 bytes per asked-for node) are not counted.
//
// Thread safety: pure functions; MeasureOwnershipTraffic runs `threads` threads of its own and
// calls the GraphSource from all of them (GraphSource allows concurrent calls).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "skiff/sampler/graph_source.h"
#include "skiff/status.h"

namespace skiff::train {

enum class SeedRule { kOwned, kRoundRobin };
const char* SeedRuleName(SeedRule rule);  // "owned", "round-robin"

// Contiguous ranges of partitions, one per rank, balanced by training nodes: rank r gets
// partitions [first_partition[r], first_partition[r+1]) (returned in *first_partition, size
// ranks + 1, when not null), the cut before rank r placed at the partition boundary whose count of
// training nodes before it is nearest r * T / ranks, every rank getting at least one partition.
// `boundaries` is the dataset's (size k + 1, starting at 0, non-decreasing); `train` ascending node
// IDs below boundaries[k]. Returns each node's owner (size boundaries[k]). InvalidArgument when
// ranks < 1 or ranks > k.
Result<std::vector<int32_t>> PartitionOwners(std::span<const int64_t> boundaries,
                                             std::span<const int64_t> train, int ranks,
                                             std::vector<int>* first_partition);

// Each of num_nodes nodes owned by rank HashKey(seed, stream, node) mod ranks (ranks >= 1).
std::vector<int32_t> RandomOwners(int64_t num_nodes, int ranks, uint64_t seed);

struct TrafficOptions {
  // The trainer's defaults (train_options.h): the measured batches are the first epoch's.
  std::vector<int> fanouts{15, 10};
  int64_t batch_size = 1024;
  uint64_t seed = 0;  // the training run's --seed
  uint64_t epoch = 0;
  SeedRule rule = SeedRule::kOwned;
  int threads = 1;
};

// One rank's epoch.
struct RankTraffic {
  int64_t seeds = 0;                              // training seeds the rank trains
  int64_t batches = 0;                            // batches it samples (non-empty ones)
  int64_t neighbors = 0, remote_neighbors = 0;    // edges of the blocks
  int64_t rows_expanded = 0, remote_rows = 0;     // nodes whose lists a batch reads
  int64_t picks = 0, remote_picks = 0;            // distinct sampled neighbours per node and batch
  int64_t input_rows = 0, remote_input_rows = 0;  // feature rows the batches read

  uint64_t remote_adjacency_bytes() const;
  uint64_t remote_feature_bytes(uint64_t feature_row_bytes) const;
  void Add(const RankTraffic& other);
};

// Samples the epoch's batches of every rank (see above) over `graph` and counts them. `owners` has
// one entry in [0, ranks) per node of the graph; `train` the training seeds (distinct node IDs).
// Returns one RankTraffic per rank. InvalidArgument for mismatched sizes or an owner out of range;
// the sampler's errors pass through.
Result<std::vector<RankTraffic>> MeasureOwnershipTraffic(const sampler::GraphSource& graph,
                                                         std::span<const int64_t> train,
                                                         std::span<const int32_t> owners, int ranks,
                                                         const TrafficOptions& options);

}  // namespace skiff::train
