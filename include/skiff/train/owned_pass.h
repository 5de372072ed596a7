// The passes of one rank of an owned-partition job (docs/distributed.md, "Owned partitions").
//
// Each pass takes the one-process plan's batches (PlanBatches with the run's seed and epoch) and
// restricts each to the seeds this rank owns (NodeRanges), in plan order: rank r's part of batch b.
// Every part keeps its plan batch number b for its sampler seed (BatchSeed(seed, stream, epoch,
// b)), so with the exchange sources (ExchangeGraph, ExchangeFeatures) a part is sampled, and its
// rows gathered, exactly as one process samples and gathers the same seeds. Parts are prepared one
// at a time on the calling thread, which drives the communicator: every rank prepares every plan
// batch's part -- also an empty one, whose exchanges still run -- in plan order.
//
// Thread safety: one thread (the communicator's).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/status.h"
#include "skiff/train/batch_stream.h"
#include "skiff/train/node_ranges.h"

namespace skiff::train {

struct OwnedPassSpec {
  std::vector<std::vector<int64_t>> plan;  // the one-process plan's batches, in order
  uint64_t seed = 0, stream = 0, epoch = 0;
  const std::vector<int32_t>* labels = nullptr;  // every node's (null: -1)
  bool gather_features = true;
};

// The part of `batch` that `rank` owns, in the batch's order.
std::vector<int64_t> OwnedPart(std::span<const int64_t> batch, const NodeRanges& ranges, int rank);

// Hands every plan batch's part (PreparedBatch::index = the plan batch number,
// PreparedBatch::whole_labelled = the labelled seeds of the whole plan batch) to `consume`, in plan
// order. Returns the first error: the sampler's, the gather's, or consume's.
Status RunOwnedPass(const sampler::NeighborSampler& sampler, const sampler::FeatureSource& features,
                    const NodeRanges& ranges, int rank, const OwnedPassSpec& spec,
                    const std::function<Status(PreparedBatch&)>& consume);

// One line naming a sampled part and its input rows by checksum: "epoch E stream S batch B rank R
// seeds N inputs M graph H1 features H2" (H1 over the seeds, input nodes and every block's sizes,
// indptr, indices and recorded degrees; H2 over the rows' bytes). Two parts have the same line
// when they are the same batch with the same rows (up to checksum collisions). The owned-partition
// test compares a job's lines with one process's (`skiff ownership --digest`).
std::string BatchDigestLine(uint64_t epoch, uint64_t stream, uint64_t batch, int rank,
                            const sampler::MiniBatch& mb, std::span<const float> features);

}  // namespace skiff::train
