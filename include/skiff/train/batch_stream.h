// BatchStream: the sampling and gathering stages of training, run by a pool of worker threads.
//
// Given the planned batches of one pass (an epoch or an evaluation), workers take batch indices in
// order, sample each batch (NeighborSampler over a GraphSource, seeded with
// BatchSeed(seed, stream, epoch, index)), fill its labels, and gather the input feature rows from a
// FeatureSource. Results are handed to the single consumer (the compute stage) strictly in batch
// order through a bounded window of `capacity` batches, so memory in flight is bounded and the
// output does not depend on the number of threads. Per-stage busy time (sample, gather) and the
// consumer's wait are recorded for metrics.
//
// Errors: the first failing batch's Status is returned by Next() when that batch is due; the
// remaining workers stop. Destroying the stream early stops and joins the workers.
//
// Thread safety: Next() and the accessors are called by one consumer thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "skiff/float_buffer.h"
#include "skiff/mutex.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/status.h"

namespace skiff::train {

struct PreparedBatch {
  int64_t index = 0;
  sampler::MiniBatch batch;
  FloatBuffer features;  // batch.input_nodes.size() x FeatureSource::dim()
  // `features` holds block 0's num_dst own rows then its num_dst aggregated rows instead
  // (model::AggregateFirstLayerInput; only from a pass runner, when PassSpec::aggregation asks).
  bool aggregated = false;
  int part = 0;              // which node set of the pass it is from (PassSpec::more)
  uint64_t sample_seed = 0;  // the sampler seed of the batch (sampler::BatchSeed)
  // Seeds and labels only: the model samples the batch on its device from sample_seed
  // (BatchStreamOptions::sample false; model::BatchInput::sample).
  bool unsampled = false;
  // A rank's part of a plan batch in an owned-partition run (owned_pass.h): the labelled seeds of
  // the whole plan batch, which the part's gradient is weighted against. -1: the batch is whole.
  int64_t whole_labelled = -1;
};

struct BatchStreamOptions {
  int threads = 1;      // sampler/gather workers (>= 1)
  size_t capacity = 4;  // batches prepared ahead of the consumer (>= 1)
  uint64_t seed = 0;
  uint64_t stream = 0;  // distinguishes training from evaluation passes
  uint64_t epoch = 0;
  bool gather_features = true;  // false: batches come without features (the model gathers them)
  bool sample = true;           // false: seeds and labels only (PreparedBatch::unsampled)
  // Batch i samples as batch number batch_numbers[i] of (seed, stream, epoch) (empty: as batch i).
  std::vector<uint64_t> batch_numbers;
};

class BatchStream {
 public:
  // The sampler, features and labels (size num_nodes; may be null) must outlive the stream.
  BatchStream(const sampler::NeighborSampler& sampler, const sampler::FeatureSource& features,
              const std::vector<int32_t>* labels, std::vector<std::vector<int64_t>> batches,
              BatchStreamOptions options);
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  // The next batch in order; nullopt after the last one. A worker's error is returned once.
  Result<std::optional<PreparedBatch>> Next();
  // Hands a consumed batch's feature buffer back for reuse by a later batch (optional). A sampled
  // batch's features are hundreds of MB on large graphs; reusing the buffer saves the kernel's
  // page zeroing and faults of a fresh allocation per batch. At most `capacity` are kept.
  void Recycle(PreparedBatch&& done);

  int64_t num_batches() const { return static_cast<int64_t>(batches_.size()); }
  double sample_busy_seconds() const;
  double gather_busy_seconds() const;
  double consumer_wait_seconds() const { return consumer_wait_seconds_; }

 private:
  void Worker();
  // Claims the next batch into *prepared (its index and seed, and a recycled feature buffer);
  // false when the stream is stopped or every batch is claimed.
  bool Claim(PreparedBatch* prepared);
  // The sampled batch's labels and, when the stream gathers them, its input features.
  Status LabelAndGather(PreparedBatch* prepared) const;
  // Puts the batch (or, when `status` is an error, that error, and stops the stream) in its slot.
  void Deliver(PreparedBatch prepared, const Status& status, double sample_ns, double gather_ns);
  // Whether a worker may claim the next batch (its slot is free), or has nothing left to do.
  bool ClaimReady() const SKIFF_REQUIRES(mu_);
  // Whether Next can return: the batch due is in its slot, or a stopped stream holds an error
  // (the batch due may then never come).
  bool DeliveryReady() const SKIFF_REQUIRES(mu_);

  const sampler::NeighborSampler& sampler_;
  const sampler::FeatureSource& features_;
  const std::vector<int32_t>* labels_;
  const std::vector<std::vector<int64_t>> batches_;
  const BatchStreamOptions options_;

  mutable Mutex mu_;
  CondVar cv_;
  int64_t next_to_claim_ SKIFF_GUARDED_BY(mu_) = 0;
  int64_t next_to_deliver_ SKIFF_GUARDED_BY(mu_) = 0;
  bool stop_ SKIFF_GUARDED_BY(mu_) = false;
  // A ring of `capacity` batches, claimed or delivered in order.
  std::vector<std::optional<Result<PreparedBatch>>> slots_ SKIFF_GUARDED_BY(mu_);
  std::vector<FloatBuffer> free_features_ SKIFF_GUARDED_BY(mu_);  // recycled buffers
  double sample_ns_ SKIFF_GUARDED_BY(mu_) = 0;
  double gather_ns_ SKIFF_GUARDED_BY(mu_) = 0;
  double consumer_wait_seconds_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace skiff::train
