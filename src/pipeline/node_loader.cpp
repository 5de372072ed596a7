#include "skiff/pipeline/node_loader.h"

#include <algorithm>

#include "skiff/pipeline/memory_budget.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/train/batch_plan.h"
#include "skiff/units.h"

namespace skiff::pipeline {

namespace {

Status CheckOptions(const format::Dataset& dataset, const NodeLoaderOptions& options) {
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

// The out-of-core options of a loader: exact sampling, the caller's model in place of Skiff's, the
// rows gathered raw (a model of the caller's needs every input row, never an aggregate).
OutOfCoreOptions LoaderOutOfCoreOptions(const format::Manifest& m,
                                        const NodeLoaderOptions& options) {
  OutOfCoreOptions o;
  o.memory_bytes = options.memory_bytes;
  o.sampling = SamplingMode::kExact;
  o.batch_size = options.batch_size;
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
  return o;
}

}  // namespace

Result<std::unique_ptr<NodeLoader>> NodeLoader::Create(const format::Dataset* dataset,
                                                       NodeLoaderOptions options) {
  SKIFF_RETURN_IF_ERROR(CheckOptions(*dataset, options));
  const format::Manifest& m = dataset->manifest();
  std::unique_ptr<NodeLoader> loader(new NodeLoader());
  loader->dataset_ = dataset;
  loader->options_ = options;
  SKIFF_ASSIGN_OR_RETURN(loader->ooc_,
                         OutOfCore::Create(dataset, LoaderOutOfCoreOptions(m, options)));
  SKIFF_ASSIGN_OR_RETURN(loader->labels_, dataset->LoadLabels());
  loader->sample_ = LabelledSampleFn(options.fanouts, options.record_degrees, &loader->labels_);
  loader->disk_features_ = std::make_unique<DiskFeatureSource>(loader->ooc_->exact_graph());
  return loader;
}

Status NodeLoader::SampleNow(std::span<const int64_t> seeds, uint64_t rng_seed,
                             sampler::MiniBatch* batch) const {
  // Exact sampling reads what is not resident, a hop's lists together (ResidentGraphSource).
  const ResidentSet nothing(
      std::vector<std::shared_ptr<const storage::PartitionPin>>(ooc_->num_partitions()));
  const BatchGraph view(&ooc_->graph(), &nothing);
  const std::span<const int64_t> one[] = {seeds};
  const uint64_t rng[] = {rng_seed};
  sampler::MiniBatch* out[] = {batch};
  return sample_(view, one, rng, out);
}

Status NodeLoader::ReadRows(std::span<const int64_t> nodes, float* out) const {
  const int64_t n = dataset_->manifest().num_nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= n) {
      return Status::InvalidArgument("node " + std::to_string(nodes[i]) + " (at " +
                                     std::to_string(i) + ") is not in [0, " + std::to_string(n) +
                                     ")");
    }
  }
  return disk_features_->Gather(nodes, out);
}

Result<std::unique_ptr<PassStream>> NodeLoader::Start(std::span<const int64_t> nodes, bool shuffle,
                                                      uint64_t stream, uint64_t epoch) {
  PassOptions pass;
  pass.batch_size = options_.batch_size;
  pass.seed = options_.seed;
  pass.stream = stream;
  pass.epoch = epoch;
  pass.admit_past_consumer = true;
  if (ooc_->fully_resident() || ooc_->uniform_training_order() || !shuffle) {
    // The Trainer's batch order (train::BatchStream's): the same batches in and out of core.
    for (const auto& batch :
         train::PlanBatches(nodes, options_.batch_size, shuffle, options_.seed, epoch)) {
      pass.resident_order.insert(pass.resident_order.end(), batch.begin(), batch.end());
    }
  }
  return ooc_->StartPass(nodes, pass, sample_);
}

uint64_t NodeLoader::model_bytes() const {
  for (const MemoryItem& item : ooc_->memory_plan().items) {
    if (item.name == kConsumerModelItem) return item.bytes;
  }
  return options_.model_bytes;
}

std::string NodeLoader::Describe() const {
  return ooc_->Describe() + "; budget " +
         (options_.memory_bytes == 0 ? std::string("none (everything resident)")
                                     : FormatBytes(options_.memory_bytes)) +
         ", " + FormatBytes(model_bytes()) + " kept for the model";
}

}  // namespace skiff::pipeline
