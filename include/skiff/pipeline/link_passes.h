// The out-of-core pipeline as the LinkTrainer's pass runner (`skiff train --task link`, with or
// without --memory).
//
// OpenOutOfCoreLink opens the dataset's partitions and plans the memory budget for link batches:
// a training batch is up to 2 x batch_size + negatives seeds (its edges' endpoints and the shared
// negatives), an evaluation batch up to 4 x its edges + eval_negatives (the held-out edges', as
// many non-edges', and the shared candidates); the edge split and one epoch's plan are counted as
// resident metadata. The budget may make evaluation batches smaller (eval_batch_edges). A
// GraphSAGE model on the CPU (`cpu_model`) takes its first layer's input aggregated as it is read,
// as `skiff train` does for node classification, when the plan chooses it (out of core).
//
// MakeOutOfCoreLinkRunner runs each pass as one buffer state in the pass's own batch order
// (PassOptions::resident_order): the resident partitions serve what they hold, and exact sampling
// reads the rest fine-grained, so the batches -- each the seeds LinkTrainer planned, sampled with
// sampler seed BatchSampleSeed(seed, LinkPartStream(stream, b), epoch, 0), b being the pass's
// LinkPassSpec::batch_numbers[b] when it has them -- are the same with and
// without a budget. (Decision: one state in the trainer's order rather than buffer states chosen
// by partition pairs, as MariusGNN does. It keeps training's batches and negatives independent of
// the budget, which is what lets an out-of-core run match the in-memory one; the price is fine
// reads for the endpoints outside the buffer.) Training passes print the pipeline's report.
//
// Thread safety: the runner is called by one thread, one pass at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/pipeline/disk_sources.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/sampler/csr_source.h"
#include "skiff/train/link_trainer.h"
#include "skiff/train/train_options.h"

namespace skiff::pipeline {

// Representations a budgeted run holds at once while ranking among the dataset's candidates:
// 64k rows of 64 floats; fewer chunks would save little (each node batch is encoded once either
// way) and take the training batches' bytes.
inline constexpr uint64_t kBudgetedCandidateChunkBytes = uint64_t{16} << 20;

struct OutOfCoreLink {
  std::unique_ptr<OutOfCore> ooc;
  std::unique_ptr<DiskGraphSource> graph;
  std::unique_ptr<DiskFeatureSource> features;
  std::unique_ptr<sampler::DatasetCsr> csr;
  train::LinkData data;          // sources above, the edge split in memory
  int64_t eval_batch_edges = 0;  // held-out edges per evaluation batch (LinkTrainer)
  // Representations held at once when pairs are ranked among the dataset's candidates
  // (LinkTrainer::SetCandidateChunkBytes): under a budget kBudgetedCandidateChunkBytes, or every
  // node's when less, counted in it; 0 (all at once) in memory.
  uint64_t candidate_chunk_bytes = 0;
  // The disk's sequential read rate for the passes' physical-limit line (EpochReport; skiff train
  // --disk-bandwidth); 0: unknown.
  double disk_bytes_per_second = 0;
};

// `dataset` must outlive the result. InvalidArgument when the dataset has no features or no edge
// split; ResourceExhausted (naming the least budget) when the budget cannot hold a batch.
Result<std::unique_ptr<OutOfCoreLink>> OpenOutOfCoreLink(const format::Dataset* dataset,
                                                         const train::TrainOptions& options,
                                                         uint64_t memory_bytes,
                                                         SamplingMode sampling, int threads,
                                                         bool cpu_model);

// The most seeds of a batch of `batch_edges` pairs and `negatives` shared negatives.
int64_t LinkBatchSeeds(int64_t batch_edges, int negatives);

// The sampler stream of batch `batch` of a link pass with stream `stream`.
uint64_t LinkPartStream(uint64_t stream, uint64_t batch);

// The pass options of a link pass whose batch b has the seeds seeds[b]: one buffer state in that
// order, batch b a part of its own sampled with stream LinkPartStream(stream, number), its number
// being batch_numbers[b] when given (one per batch), else b. InvalidArgument for a batch without
// seeds. Takes the seeds (an epoch's plan) and frees each batch's once the order holds it.
Result<PassOptions> LinkPassOptions(uint64_t seed, uint64_t stream, uint64_t epoch,
                                    std::vector<std::vector<int64_t>> seeds,
                                    std::span<const uint64_t> batch_numbers = {});

// `link` must outlive the runner.
train::LinkPassRunner MakeOutOfCoreLinkRunner(OutOfCoreLink* link,
                                              const train::TrainOptions& options,
                                              bool print_reports);

}  // namespace skiff::pipeline
