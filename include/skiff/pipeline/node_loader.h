// NodeLoader: the out-of-core pipeline as a source of sampled, labelled, gathered batches for a
// model that Skiff does not run (the Python package's skiff.NodeLoader).
//
// Create() opens the dataset's partitions and plans the memory budget as `skiff train --memory`
// does (OutOfCore), except that the model terms are the caller's: `model_bytes` reserved for its
// model and working memory, and `kept_batches` batches it keeps while the next ones are prepared
// (a loop keeps the one it trains on; it drops the previous one as the next is handed over). Each
// Start() begins one pass over a node set and returns its PassStream: the caller pulls the batches
// (Next) and releases each when done (Release); the stages run ahead within the budget meanwhile.
//
// Batches: the training core's NeighborSampler with the given fanouts (input layer first), seeds
// labelled from the dataset, input rows gathered as float32 (`features`, row-major, one row per
// `batch.input_nodes`). The batch order is the Trainer's: with every partition resident (no
// budget), or with too few resident to mix (exact sampling), the pass cuts train::PlanBatches of
// the node set and batch i is sampled with BatchSeed(seed, stream, epoch, i) -- the batches
// `skiff train` draws for the same seed with the same stream (train::kTrainStream for training
// nodes). With more partitions resident the pass follows the plan's buffer states (fewer reads;
// other batches, as in `skiff train --memory`).
//
// The memory promise: peak RSS <= memory_bytes + kFixedOverheadBytes, while the caller keeps at
// most `kept_batches` batches and its model stays within `model_bytes` (the caller's own
// process baseline -- an interpreter and its libraries -- comes on top).
//
// Thread safety: Start() from one thread at a time, one stream at a time; the streams follow
// PassStream's rules. The loader must outlive its streams.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/pipeline/disk_sources.h"
#include "skiff/pipeline/epoch_runner.h"
#include "skiff/pipeline/loader_options.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"
#include "skiff/storage/io_engine.h"

namespace skiff::pipeline {

// The loader options (loader_options.h): batch_size counts seed nodes.
using NodeLoaderOptions = LoaderOptions;

class NodeLoader {
 public:
  // `dataset` must outlive the loader. InvalidArgument for options that do not fit the dataset
  // (no features, empty fanouts, batch_size < 1); ResourceExhausted naming the least budget when
  // `memory_bytes` cannot hold one batch.
  static Result<std::unique_ptr<NodeLoader>> Create(const format::Dataset* dataset,
                                                    NodeLoaderOptions options);

  // Starts a pass over `nodes` (distinct IDs in [0, num_nodes)): shuffled by (seed, epoch) when
  // `shuffle`, else in the given order, with the random stream `stream`. InvalidArgument names a
  // node outside the graph.
  Result<std::unique_ptr<PassStream>> Start(std::span<const int64_t> nodes, bool shuffle,
                                            uint64_t stream, uint64_t epoch);

  // One batch of `seeds` sampled now, on the calling thread, as a pass samples it with sampler
  // seed `rng_seed` (labelled; the neighbour lists read through the buffer pool, a hop's
  // together, nothing pinned): for callers that cut and order the batches themselves (skiff.pyg's
  // sampler under PyG's NodeLoader). Thread-safe. InvalidArgument on an out-of-range or repeated
  // seed.
  Status SampleNow(std::span<const int64_t> seeds, uint64_t rng_seed,
                   sampler::MiniBatch* batch) const;
  // The float32 rows of `nodes` (any order) into out (nodes.size() x feature_dim), through the
  // buffer pool and the hot row cache, checksums verified. Thread-safe. InvalidArgument names a
  // node outside the graph.
  Status ReadRows(std::span<const int64_t> nodes, float* out) const;

  const NodeLoaderOptions& options() const { return options_; }
  const std::vector<int32_t>& labels() const { return labels_; }
  const MemoryPlan& memory_plan() const { return ooc_->memory_plan(); }
  // What the plan keeps for the caller's model (model_bytes, or the default).
  uint64_t model_bytes() const;
  int64_t feature_dim() const { return dataset_->manifest().feature_dim; }
  // "64 partitions, 17 slots ... ; budget: ..." for a log line.
  std::string Describe() const;

 private:
  NodeLoader() = default;
  const format::Dataset* dataset_ = nullptr;
  NodeLoaderOptions options_;
  std::unique_ptr<OutOfCore> ooc_;
  std::unique_ptr<DiskFeatureSource> disk_features_;  // ReadRows': nothing pinned
  std::vector<int32_t> labels_;
  SampleGroupFn sample_;
};

}  // namespace skiff::pipeline
