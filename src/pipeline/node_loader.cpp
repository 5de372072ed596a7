#include "skiff/pipeline/node_loader.h"

#include <algorithm>

#include "skiff/pipeline/trainer_passes.h"
#include "skiff/train/batch_plan.h"

namespace skiff::pipeline {

Result<std::unique_ptr<NodeLoader>> NodeLoader::Create(const format::Dataset* dataset,
                                                       NodeLoaderOptions options) {
  SKIFF_RETURN_IF_ERROR(CheckLoaderOptions(*dataset, options));
  const format::Manifest& m = dataset->manifest();
  std::unique_ptr<NodeLoader> loader(new NodeLoader());
  loader->dataset_ = dataset;
  loader->options_ = options;
  SKIFF_ASSIGN_OR_RETURN(
      loader->ooc_,
      OutOfCore::Create(dataset, LoaderOutOfCoreOptions(m, options, options.batch_size)));
  SKIFF_ASSIGN_OR_RETURN(loader->labels_, dataset->LoadLabels());
  loader->sample_ = LabelledSampleFn(options.fanouts, options.record_degrees, &loader->labels_);
  loader->disk_features_ = std::make_unique<DiskFeatureSource>(loader->ooc_->exact_graph());
  return loader;
}

Status NodeLoader::SampleNow(std::span<const int64_t> seeds, uint64_t rng_seed,
                             sampler::MiniBatch* batch) const {
  // Checked here, before the hop's lists are looked up: the sampler checks its seeds only once
  // the source that reads them ahead is built.
  const int64_t n = dataset_->manifest().num_nodes;
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= n) {
      return Status::InvalidArgument("seed node " + std::to_string(seeds[i]) + " (at " +
                                     std::to_string(i) + ") is not in [0, " + std::to_string(n) +
                                     ")");
    }
  }
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
  return ooc_->StartPass(nodes, std::move(pass), sample_);
}

uint64_t NodeLoader::model_bytes() const {
  return ConsumerModelBytes(ooc_->memory_plan(), options_.model_bytes);
}

std::string NodeLoader::Describe() const { return DescribeLoader(*ooc_, options_); }

}  // namespace skiff::pipeline
