// The out-of-core pipeline as the Trainer's pass runner (`skiff train --memory`).
//
// MakeOutOfCorePassRunner returns a train::PassRunner that runs each pass the Trainer asks for --
// a training epoch or an evaluation over valid/test nodes -- through OutOfCore::RunPass: batches
// are sampled by the training core's NeighborSampler over the batch's ResidentGraphSource (training
// or evaluation fanouts), labelled, gathered, and handed to the Trainer's compute step in order.
// Evaluation passes are cut into batches no larger than the budget allows (OutOfCore::
// eval_batch_size: an evaluation batch needs no more memory than a training batch), which changes
// how nodes are grouped, not what is computed for each node. When every partition is resident the
// passes keep the training core's batch order (train::PlanBatches), so a run with the whole
// dataset in the buffer draws exactly the batches of the in-memory BatchStream. Aggregated
// evaluation passes that will run again (PassSpec::repeats) keep their batches in a PassCache under
// OutOfCoreTraining::replay_dir, and later passes over the same nodes replay them (pass_cache.h).
// An evaluation over several node sets (PassSpec::more: validation and test) gathered aggregated
// runs as one pipeline pass (EpochRunnerOptions::parts), its gather groups spanning the sets;
// otherwise the sets run one after the other.
// After every pass the heap's freed memory is handed back to the system (malloc_trim), so that
// one pass's leftovers do not raise the next one's peak.
// Each pass's EpochReport becomes the JSON object the Trainer writes into its metrics under
// "pipeline", and training passes print their report (stage busy/stall, bytes read, read
// amplification) at the end of the epoch.
//
// OpenOutOfCoreTraining prepares everything `skiff train --memory` needs: the OutOfCore (budget
// planned for this model and these fanouts) and a TrainData whose graph and feature sources read
// from disk (DiskGraphSource / DiskFeatureSource: used outside the epoch loop, e.g. by export),
// with labels and the split node lists in memory (both counted in the budget).
//
// Thread safety: the returned runner is called by the Trainer's thread, one pass at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "skiff/pipeline/disk_sources.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/train/trainer.h"

namespace skiff::pipeline {

struct OutOfCoreTraining {
  std::unique_ptr<OutOfCore> ooc;
  std::unique_ptr<DiskGraphSource> graph;
  std::unique_ptr<DiskFeatureSource> features;
  std::unique_ptr<sampler::DatasetCsr> csr;  // for a model that samples on its device
  train::TrainData data;
  // Where evaluation passes that repeat keep their batches (PassCache: an unnamed file, gone when
  // the run ends); empty: nowhere, every evaluation samples and gathers again. Only out of core
  // with aggregated input, where an evaluation pass otherwise reads the feature file several times.
  std::string replay_dir;
  // The disk's sequential read rate for the passes' physical-limit line (EpochReport; skiff train
  // --disk-bandwidth); 0: unknown.
  double disk_bytes_per_second = 0;
};

// Where the model that will compute runs and what it keeps there (skiff train's --device,
// --sampler and what the device has room for): what the memory plan counts on the host.
struct ComputeSite {
  // It takes its first layer's input aggregated (the CPU model; OutOfCoreOptions).
  bool aggregated_input = false;
  // It computes on a device (the CUDA model): activations live there. With the feature rows on the
  // host, each batch carries its rows, and `device_cache_rows` of them are cached on the device.
  bool device = false;
  int64_t device_cache_rows = 0;
  // It holds every feature row in device memory (implies `device`): batches are planned without
  // them. `graph_on_device`: the graph too, and it samples there (--sampler device), so the host
  // holds no adjacency and samples nothing.
  bool features_on_device = false;
  bool graph_on_device = false;
  // Model replicas on as many devices (--gpus), each staging its own batches.
  int device_replicas = 1;
};

// The widths and parameter count of the model `options` train on `dataset`, for a memory plan.
// InvalidArgument when the dataset has no features or no classes.
Result<ModelShape> HostModelShape(const format::Dataset& dataset,
                                  const train::TrainOptions& options);

// Gather threads of the pipeline for `site` with `threads` threads in all: several (a quarter of
// them, at most kMaxRowGatherThreads) when a device model takes its input rows from the host,
// else one.
inline constexpr int kMaxRowGatherThreads = 4;
int RowGatherThreads(const ComputeSite& site, int threads);

// `dataset` must outlive the result. ResourceExhausted (naming the minimum) when the budget cannot
// hold a working set for this model, batch size and fanouts.
Result<std::unique_ptr<OutOfCoreTraining>> OpenOutOfCoreTraining(const format::Dataset* dataset,
                                                                 const train::TrainOptions& options,
                                                                 uint64_t memory_bytes,
                                                                 SamplingMode sampling, int threads,
                                                                 const ComputeSite& site);

// Samples a group with the training core's NeighborSampler over the group's ResidentGraphSource
// and labels its seeds from `labels` (size num_nodes; null: -1). One source for the whole group:
// its hop-batched reads then cover every batch of the group. `labels` must outlive the function.
SampleGroupFn LabelledSampleFn(std::vector<int> fanouts, bool record_degrees,
                               const std::vector<int32_t>* labels);

// The evaluation fanouts the Trainer uses for `options` (its default when none are given).
std::vector<int> EffectiveEvalFanouts(const train::TrainOptions& options);

// `ooc` and `labels` (size num_nodes) must outlive the runner. `record_degrees`: the sampler
// fills Block::src_degree (model::NeedsNodeDegrees).
// MakeOutOfCorePassRunner (below) for a Trainer created with `options` over `training->data`: its
// training and evaluation fanouts, node degrees when the model needs them, its seed. `training`
// must outlive the runner.
train::PassRunner MakeOutOfCorePassRunner(OutOfCoreTraining* training,
                                          const train::TrainOptions& options, bool print_reports);

// Makes `training` the batch engine of `trainer` (created with `options` over training->data):
// its pass runner (above), the plan's micro-batches and evaluation parts
// (Trainer::SetMicroBatches), and the plan's evaluation batch limit (Trainer::SetEvalBatchLimit).
// `training` must outlive the trainer's passes.
void AttachOutOfCore(train::Trainer* trainer, OutOfCoreTraining* training,
                     const train::TrainOptions& options, bool print_reports);

// `replay_dir`, `disk_bytes_per_second`: OutOfCoreTraining's.
train::PassRunner MakeOutOfCorePassRunner(OutOfCore* ooc, const std::vector<int32_t>* labels,
                                          std::vector<int> fanouts, std::vector<int> eval_fanouts,
                                          bool record_degrees, uint64_t seed, bool print_reports,
                                          std::string replay_dir = "",
                                          double disk_bytes_per_second = 0);

}  // namespace skiff::pipeline
