#include "skiff/pipeline/link_loader.h"

#include "skiff/pipeline/link_passes.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/random.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/link_trainer.h"

namespace skiff::pipeline {
namespace {

// IDs held per pair: the pair itself, and one pass's plan (its index, its two seeds in the pass
// and in its batch, its two rows) with the labels the caller keeps beside it.
constexpr int64_t kIdsPerPair = 8;

Status CheckEdges(const LinkEdges& edges, int64_t num_nodes) {
  if (edges.pairs.empty()) return Status::InvalidArgument("a link loader needs at least one pair");
  if (edges.pairs.size() % 2 != 0) {
    return Status::InvalidArgument("pairs are (source, destination): an odd count of node IDs");
  }
  for (size_t i = 0; i < edges.pairs.size(); ++i) {
    if (edges.pairs[i] < 0 || edges.pairs[i] >= num_nodes) {
      return Status::InvalidArgument("pair " + std::to_string(i / 2) + " has node " +
                                     std::to_string(edges.pairs[i]) + ", not in [0, " +
                                     std::to_string(num_nodes) + ")");
    }
  }
  return Status::Ok();
}

// The seed of a pass's negative draws: the run's seed for training (LinkTrainer's), one of its
// own for each other stream.
uint64_t NegativeSeed(uint64_t seed, uint64_t stream) {
  return stream == train::kTrainStream ? seed : HashKey(seed, 0x4e454753, stream);
}

}  // namespace

Result<LinkEdges> SplitEdges(const format::Dataset& dataset, std::string_view name) {
  if (name != "train" && name != "valid" && name != "test") {
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' is not a split of the edge split: train, valid or test");
  }
  train::LinkData data;
  SKIFF_RETURN_IF_ERROR(train::LoadEdgeSplit(dataset, &data));
  LinkEdges edges;
  if (name == "train") {
    edges.pairs = std::move(data.train);
    edges.stream = train::kTrainStream;
    edges.reorient = data.undirected;
  } else {
    const bool valid = name == "valid";
    edges.pairs = std::move(valid ? data.valid : data.test);
    const std::vector<int64_t>& non_edges = valid ? data.valid_neg : data.test_neg;
    edges.stream = valid ? train::kValidStream : train::kTestStream;
    edges.positives = static_cast<int64_t>(edges.pairs.size() / 2);
    edges.pairs.insert(edges.pairs.end(), non_edges.begin(), non_edges.end());
    return edges;
  }
  edges.positives = static_cast<int64_t>(edges.pairs.size() / 2);
  return edges;
}

LinkEdges GivenEdges(std::vector<int64_t> pairs) {
  LinkEdges edges;
  edges.positives = static_cast<int64_t>(pairs.size() / 2);
  edges.pairs = std::move(pairs);
  edges.stream = train::kTrainStream;
  return edges;
}

Result<std::unique_ptr<LinkLoader>> LinkLoader::Create(const format::Dataset* dataset,
                                                       LinkEdges edges, LinkLoaderOptions options) {
  SKIFF_RETURN_IF_ERROR(CheckLoaderOptions(*dataset, options.loader));
  if (options.negatives < 0) {
    return Status::InvalidArgument("negatives " + std::to_string(options.negatives) +
                                   " is negative");
  }
  const format::Manifest& m = dataset->manifest();
  SKIFF_RETURN_IF_ERROR(CheckEdges(edges, m.num_nodes));
  std::unique_ptr<LinkLoader> loader(new LinkLoader());
  loader->dataset_ = dataset;
  loader->edges_ = std::move(edges);
  loader->options_ = std::move(options);
  const LoaderOptions& o = loader->options_.loader;
  const int64_t pairs = loader->num_pairs();
  const int64_t extra_ids = kIdsPerPair * pairs + 2 * int64_t{loader->options_.negatives} *
                                                      ((pairs + o.batch_size - 1) / o.batch_size);
  OutOfCoreOptions ooc_options = LoaderOutOfCoreOptions(
      m, o, LinkBatchSeeds(o.batch_size, loader->options_.negatives), extra_ids);
  ooc_options.node_labels = false;  // the caller keeps the pairs' labels (counted in extra_ids)
  SKIFF_ASSIGN_OR_RETURN(loader->ooc_, OutOfCore::Create(dataset, ooc_options));
  loader->csr_ = std::make_unique<sampler::DatasetCsr>(*dataset);
  loader->sample_ = LabelledSampleFn(o.fanouts, o.record_degrees, nullptr);
  return loader;
}

Result<train::EdgePass> LinkLoader::Plan(bool shuffle, uint64_t epoch) const {
  const LoaderOptions& o = options_.loader;
  const train::EdgePassOptions plan{.batch_size = o.batch_size,
                                    .shuffle = shuffle,
                                    .seed = o.seed,
                                    .negative_seed = NegativeSeed(o.seed, edges_.stream),
                                    .epoch = epoch,
                                    .reorient = edges_.reorient,
                                    .negatives = {options_.negatives, options_.negative_sampler,
                                                  dataset_->manifest().num_nodes, csr_.get()}};
  return train::PlanEdgePass(edges_.pairs, plan);
}

Result<LinkPass> LinkLoader::Start(bool shuffle, uint64_t epoch) {
  LinkPass pass;
  SKIFF_ASSIGN_OR_RETURN(pass.edges, Plan(shuffle, epoch));
  std::vector<std::vector<int64_t>> seeds;
  seeds.reserve(pass.edges.batches.size());
  for (train::EdgeBatch& batch : pass.edges.batches) seeds.push_back(std::move(batch.seeds));
  SKIFF_ASSIGN_OR_RETURN(PassOptions options, LinkPassOptions(options_.loader.seed, edges_.stream,
                                                              epoch, std::move(seeds)));
  options.admit_past_consumer = true;
  // The pass keeps the seeds as its plan's order (no copy of them).
  SKIFF_ASSIGN_OR_RETURN(pass.stream, ooc_->StartPass({}, std::move(options), sample_));
  return pass;
}

int64_t LinkLoader::num_batches() const {
  const int64_t size = options_.loader.batch_size;
  return (num_pairs() + size - 1) / size;
}

uint64_t LinkLoader::model_bytes() const {
  return ConsumerModelBytes(ooc_->memory_plan(), options_.loader.model_bytes);
}

std::string LinkLoader::Describe() const { return DescribeLoader(*ooc_, options_.loader); }

}  // namespace skiff::pipeline
