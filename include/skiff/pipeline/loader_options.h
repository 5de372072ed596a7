// LoaderOptions: what every loader of the pipeline shares -- a source of sampled, gathered batches
// for a model that Skiff does not run (NodeLoader, LinkLoader; the Python package's loaders).
//
// A loader runs exact sampling with the caller's fanouts, plans the memory budget with the
// caller's model in place of Skiff's (`model_bytes`, `kept_batches`: MemoryBudgetInputs::
// external_model), and gathers every input row raw (a caller's model needs the rows, never an
// aggregate). What differs between loaders is what a batch's seeds are: LoaderOutOfCoreOptions
// takes the most seeds a batch may have.
//
// Thread safety: plain functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/pipeline/memory_budget.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/status.h"
#include "skiff/storage/io_engine.h"

namespace skiff::pipeline {

struct LoaderOptions {
  std::vector<int> fanouts;   // per layer, input layer first (the sampler's order); -1: all
  int64_t batch_size = 1024;  // seeds per batch (LinkLoader: positive pairs per batch)
  uint64_t memory_bytes = 0;  // 0: no budget, every partition resident
  // Reserved for the caller's model and its working memory; 0: DefaultConsumerBytes of the
  // expected batch (memory_budget.h).
  uint64_t model_bytes = 0;
  int kept_batches = 1;
  int threads = 2;  // sampler threads (and gather threads: a quarter, at least one)
  uint64_t seed = 0;
  bool record_degrees = false;  // Block::src_degree (GCN-style normalisation)
  bool direct_io = true;
  storage::IoEngineKind io_engine = storage::IoEngineKind::kAuto;
};

// InvalidArgument, naming the option, for options no loader over `dataset` can run: no features,
// empty or negative fanouts, batch_size or threads < 1, negative kept_batches.
Status CheckLoaderOptions(const format::Dataset& dataset, const LoaderOptions& options);

// The OutOfCore options of a loader whose batches have at most `batch_seeds` seeds, holding
// `extra_ids` int64 IDs besides the dataset's node splits (OutOfCoreOptions::extra_ids).
OutOfCoreOptions LoaderOutOfCoreOptions(const format::Manifest& manifest,
                                        const LoaderOptions& options, int64_t batch_seeds,
                                        int64_t extra_ids = 0);

// What `plan` keeps for the caller's model (its kConsumerModelItem), or `asked` when it has none.
uint64_t ConsumerModelBytes(const MemoryPlan& plan, uint64_t asked);

// "64 partitions, 17 slots ... ; budget 256MiB, 16MiB kept for the model" for a log line.
std::string DescribeLoader(const OutOfCore& ooc, const LoaderOptions& options);

}  // namespace skiff::pipeline
