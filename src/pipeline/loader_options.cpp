#include "skiff/pipeline/loader_options.h"

#include <algorithm>

#include "skiff/pipeline/trainer_passes.h"
#include "skiff/units.h"

namespace skiff::pipeline {

Status CheckLoaderOptions(const format::Dataset& dataset, const LoaderOptions& options) {
  const format::Manifest& m = dataset.manifest();
  if (m.feature_dim <= 0) {
    return Status::InvalidArgument("dataset " + dataset.dir() +
                                   " has no node features (feature_dim 0): a loader gathers them");
  }
  if (options.fanouts.empty()) {
    return Status::InvalidArgument("a loader needs at least one layer of fanouts");
  }
  for (int f : options.fanouts) {
    if (f < -1) {
      return Status::InvalidArgument("fanout " + std::to_string(f) +
                                     " is not a neighbour count (>= 0, or -1 for all)");
    }
  }
  if (options.batch_size < 1) {
    return Status::InvalidArgument("batch_size " + std::to_string(options.batch_size) +
                                   " is not >= 1");
  }
  if (options.threads < 1) {
    return Status::InvalidArgument("threads " + std::to_string(options.threads) + " is not >= 1");
  }
  if (options.kept_batches < 0) {
    return Status::InvalidArgument("kept_batches " + std::to_string(options.kept_batches) +
                                   " is negative");
  }
  return Status::Ok();
}

// Exact sampling, the caller's model in place of Skiff's, the rows gathered raw.
OutOfCoreOptions LoaderOutOfCoreOptions(const format::Manifest& m, const LoaderOptions& options,
                                        int64_t batch_seeds, int64_t extra_ids) {
  OutOfCoreOptions o;
  o.memory_bytes = options.memory_bytes;
  o.sampling = SamplingMode::kExact;
  o.batch_size = batch_seeds;
  o.fanouts = options.fanouts;
  o.model = {
      .in_dim = m.feature_dim, .hidden = 0, .num_classes = std::max<int64_t>(m.num_classes, 1)};
  o.external_model = true;
  o.consumer_bytes = options.model_bytes;
  o.consumer_batches = options.kept_batches;
  o.sample_threads = options.threads;
  // Raw rows are copied row by row: a quarter of the threads gather (the CLI's rule for a device
  // model that takes its rows from the host).
  o.gather_threads = std::clamp(options.threads / 4, 1, kMaxRowGatherThreads);
  o.direct_io = options.direct_io;
  o.io_engine = options.io_engine;
  o.record_degrees = options.record_degrees;
  o.extra_ids = extra_ids;
  return o;
}

uint64_t ConsumerModelBytes(const MemoryPlan& plan, uint64_t asked) {
  for (const MemoryItem& item : plan.items) {
    if (item.name == kConsumerModelItem) return item.bytes;
  }
  return asked;
}

std::string DescribeLoader(const OutOfCore& ooc, const LoaderOptions& options) {
  return ooc.Describe() + "; budget " +
         (options.memory_bytes == 0 ? std::string("none (everything resident)")
                                    : FormatBytes(options.memory_bytes)) +
         ", " + FormatBytes(ConsumerModelBytes(ooc.memory_plan(), options.model_bytes)) +
         " kept for the model";
}

}  // namespace skiff::pipeline
