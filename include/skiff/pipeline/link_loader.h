// LinkLoader: the out-of-core pipeline as a source of link-prediction batches for a model that
// Skiff does not run (the Python package's skiff.LinkLoader).
//
// A loader goes over one set of node pairs (LinkEdges): a split of the dataset's edge split --
// "train" (its positives), "valid" or "test" (its positives, then its stored non-edges) -- or
// pairs the caller gives. Each Start() is one pass: the pairs cut into batches of `batch_size` by
// train::PlanEdgePass (shuffled by (seed, epoch) when `shuffle`), each batch with `negatives`
// nodes drawn by the negative sampler (uniform or by degree) and shared by all of its pairs, and,
// for the training split of an undirected dataset, each pair taken either way round as drawn from
// (seed, epoch). The batch's distinct nodes -- sources, then destinations, then negatives, each
// where first seen (train::EdgeBatch) -- are the seeds of one sampled mini-batch with the caller's
// fanouts, gathered as float32 rows (PreparedBatch::features, one per batch.input_nodes); the
// EdgeBatch says which seed rows each pair and negative is.
//
// The training split's batches are the ones `skiff train --task link` draws for the same seed,
// batch size, negatives, negative sampler and fanouts: the same pairs in the same orientation, the
// same negatives (drawn with the run's seed), the same sampler seeds (pipeline/link_passes.h:
// batch b is a part of its own with stream LinkPartStream(kTrainStream, b)). The pass runs as one
// buffer state in that order, so its batches are the same with and without a budget. The other
// splits draw from their own streams (valid: kValidStream, test: kTestStream) and their negatives
// from a seed derived from (seed, stream); caller pairs are drawn as the training split is, never
// reoriented.
//
// The budget is planned as NodeLoader's (loader_options.h), a batch counted as its most seeds
// (2 x batch_size + negatives), and the pairs and one pass's plan as resident metadata. The memory
// promise is NodeLoader's: peak RSS <= memory_bytes + kFixedOverheadBytes while the caller keeps at
// most `kept_batches` batches and its model stays within `model_bytes`.
//
// Thread safety: Start() from one thread at a time, one pass at a time; the streams follow
// PassStream's rules. The loader must outlive its passes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/pipeline/epoch_runner.h"
#include "skiff/pipeline/loader_options.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/sampler/csr_source.h"
#include "skiff/status.h"
#include "skiff/train/link_batches.h"

namespace skiff::pipeline {

// The pairs a loader goes over.
struct LinkEdges {
  std::vector<int64_t> pairs;  // interleaved (src, dst)
  int64_t positives = 0;       // the first `positives` pairs are edges, the rest non-edges
  uint64_t stream = 0;         // the random stream of the pass (train::kTrainStream, ...)
  bool reorient = false;       // undirected training pairs: either way round, drawn per epoch
};

// Split `name` ("train", "valid", "test") of the dataset's edge split. InvalidArgument for another
// name, or, saying how to make one, when the dataset has no edge split.
Result<LinkEdges> SplitEdges(const format::Dataset& dataset, std::string_view name);
// Pairs the caller gives (interleaved), all positives, drawn as the training split.
LinkEdges GivenEdges(std::vector<int64_t> pairs);

struct LinkLoaderOptions {
  LoaderOptions loader;  // batch_size: pairs per batch
  int negatives = 0;     // nodes drawn per batch, shared by its pairs (0: none)
  train::NegativeSampler negative_sampler = train::NegativeSampler::kUniform;
};

// One pass: the stream of its sampled batches and their edges. PreparedBatch::index b is
// edges.batches[b], whose `seeds` have moved into the stream (they are the batch's
// batch.seeds).
struct LinkPass {
  std::unique_ptr<PassStream> stream;
  train::EdgePass edges;
};

class LinkLoader {
 public:
  // `dataset` must outlive the loader. InvalidArgument for options that do not fit the dataset
  // (loader_options.h; negatives < 0), no pairs, or a pair's node outside the graph;
  // ResourceExhausted naming the least budget when `memory_bytes` cannot hold one batch.
  static Result<std::unique_ptr<LinkLoader>> Create(const format::Dataset* dataset, LinkEdges edges,
                                                    LinkLoaderOptions options);

  // Starts the pass of `epoch`: its batches are planned (negatives drawn) now, and the stages
  // start. Errors: DrawNegatives' (a degree sampler over a graph without edges).
  Result<LinkPass> Start(bool shuffle, uint64_t epoch);
  // The batches of that pass, without sampling them.
  Result<train::EdgePass> Plan(bool shuffle, uint64_t epoch) const;

  const LinkEdges& edges() const { return edges_; }
  int64_t num_pairs() const { return static_cast<int64_t>(edges_.pairs.size() / 2); }
  int64_t num_batches() const;
  const LinkLoaderOptions& options() const { return options_; }
  const MemoryPlan& memory_plan() const { return ooc_->memory_plan(); }
  // What the plan keeps for the caller's model (model_bytes, or the default).
  uint64_t model_bytes() const;
  int64_t feature_dim() const { return dataset_->manifest().feature_dim; }
  std::string Describe() const;

 private:
  LinkLoader() = default;
  const format::Dataset* dataset_ = nullptr;
  LinkEdges edges_;
  LinkLoaderOptions options_;
  std::unique_ptr<OutOfCore> ooc_;
  std::unique_ptr<sampler::DatasetCsr> csr_;  // degree negatives
  SampleGroupFn sample_;
};

}  // namespace skiff::pipeline
