// `skiff train DATASET [options]`: mini-batch GNN training (see docs/training.md).
// Options may also come from a TOML file: `--config run.toml` (keys are the long option names).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/parallel.h"
#include "skiff/enum_names.h"
#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/pipeline/disk_owned_rows.h"
#include "skiff/pipeline/link_passes.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/process.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/export.h"
#include "skiff/train/link_trainer.h"
#include "skiff/train/owned_data.h"
#include "skiff/train/trainer.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/compute_device.h"
#include "tools/skiff/config_file.h"
#include "tools/skiff/digest_file.h"
#include "tools/skiff/distributed.h"
#include "tools/skiff/inference.h"
#include "tools/skiff/link_predict.h"
#include "tools/skiff/output_paths.h"
#include "tools/skiff/owned_run.h"
#include "tools/skiff/train_flags.h"

namespace skiff::cli {
namespace {

// The command line: the training options (train_flags.h) and those of this process alone.
struct TrainCliOptions {
  std::string dataset;
  TrainFlags flags;  // the options of train::TrainOptionTable()
  std::string device = "cpu";
  std::string gpus;  // --device cuda: a model replica per listed GPU
  int threads = 0;
  int sampler_threads = 0;
  std::string resume, export_dir;
  std::string config;
  std::string memory;              // out of core when set (docs/pipeline.md)
  std::string sampling = "exact";  // out of core: exact or in-buffer
  std::string scratch_dir;         // out of core: where evaluation keeps its batches ("none")
  std::string disk_bandwidth;      // out of core: the disk's sequential read rate, for the report
  bool distributed = false;        // one rank of an mpirun job (docs/distributed.md)
  double dist_timeout = 60;        // seconds a collective waits for the other ranks
  std::string batch_digest;        // --ownership partitions: each rank's BatchDigestLines
  std::function<bool(const std::string&)> given;  // GivenIn(the command's app), once parsed
};

// The checkpoint --resume continues from: `path`, or the state after the run's last finished
// epoch kept beside it (train::LastCheckpointPath) when that is later and of the same run.
Result<train::Checkpoint> ReadResumeCheckpoint(const std::string& path) {
  SKIFF_ASSIGN_OR_RETURN(train::Checkpoint best, train::ReadCheckpoint(path));
  const std::string last_path = train::LastCheckpointPath(path);
  std::error_code ec;
  if (!std::filesystem::exists(last_path, ec)) return best;
  auto last = train::ReadCheckpoint(last_path);
  if (!last.ok()) {
    LogWarning("not resuming from " + last_path + " (" + last.status().ToString() + "): from " +
               path + ", after epoch " + std::to_string(best.epoch));
    return best;
  }
  // The same run: the same options except the epoch count (a resumed run may extend it).
  auto run_of = [](const std::string& config) {
    nlohmann::json j = nlohmann::json::parse(config, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) j.erase("epochs");
    return j;
  };
  if (run_of(last->config_json) != run_of(best.config_json) || last->epoch <= best.epoch) {
    return best;
  }
  LogInfo("resuming from " + last_path +
          ", the run's last finished epoch (the best model stays in " + path + ")");
  return std::move(last).value();
}

// Layers beyond which the default evaluation fanouts draw a warning.
constexpr int kDeepEvalLayers = 3;

// The run's options: those saved in the checkpoint of --resume, else the defaults; then the
// training options given (a resumed run ignores run-defining ones, with a warning).
Result<train::TrainOptions> OptionsOf(const TrainCliOptions& o,
                                      const std::optional<train::Checkpoint>& resume) {
  train::TrainOptions t;
  if (resume.has_value()) {
    auto saved = train::TrainOptions::FromJson(resume->config_json);
    if (!saved.ok()) return saved.status().WithContext(o.resume);
    t = *saved;
  }
  SKIFF_RETURN_IF_ERROR(ApplyTrainFlags(o.flags, o.given, resume.has_value() ? o.resume : "", &t));
  if (t.optimizer.kind == model::OptimizerKind::kAdam && t.optimizer.momentum != 0.0f) {
    LogWarning("--momentum applies to --optimizer sgd; Adam ignores it");
  }
  // Up to 100 neighbours per layer: past three layers an evaluation batch reaches most of the
  // graph, and evaluation can take far longer than training.
  if (t.eval_fanouts.empty() && t.model.num_layers > kDeepEvalLayers) {
    const std::string cap = std::to_string(train::kDefaultEvalFanoutCap);
    const std::string layers = std::to_string(t.model.num_layers);
    LogWarning("evaluation draws up to " + cap + " neighbours per layer over " + layers +
               " layers (up to " + cap + "^" + layers +
               " nodes per seed), so it can take far longer than training; --eval-fanouts (e.g. "
               "the training fanouts) bounds it");
  }
  cpu::SetNumThreads(o.threads);
  t.sampler_threads = o.sampler_threads > 0 ? o.sampler_threads : std::max(1, cpu::NumThreads());
  return t;
}

// Refuses, before any work, outputs inside the dataset's directory, files whose directory cannot
// be written, and an --export directory an export may not replace.
Status CheckOutputs(const TrainCliOptions& o, const train::TrainOptions& t) {
  for (const auto& [option, path] :
       {std::pair<const char*, const std::string&>{"--metrics", t.metrics_path},
        {"--checkpoint", t.checkpoint_path},
        {"--export", o.export_dir}}) {
    SKIFF_RETURN_IF_ERROR(CheckNotInside(option, path, o.dataset));
  }
  SKIFF_RETURN_IF_ERROR(CheckWritableDirectoryOf("--metrics", t.metrics_path));
  SKIFF_RETURN_IF_ERROR(CheckWritableDirectoryOf("--checkpoint", t.checkpoint_path));
  return CheckExportTarget("--export", o.export_dir);
}

// Prints the run's summary.
void PrintSummary(const train::TrainSummary& summary, const train::TrainOptions& t) {
  double seconds = 0;
  for (const auto& e : summary.epochs) seconds += e.epoch_seconds;
  std::printf(
      "trained %zu epochs in %s; best valid accuracy %.2f%% (epoch %lld), test accuracy "
      "%.2f%%\n",
      summary.epochs.size(), FormatSeconds(seconds).c_str(), 100 * summary.best_valid_acc,
      static_cast<long long>(summary.best_epoch), 100 * summary.best_test_acc);
  if (!t.checkpoint_path.empty() && !summary.epochs.empty()) {
    std::printf("best model: %s\n", t.checkpoint_path.c_str());
  }
}

// The best model by validation accuracy when --checkpoint kept it, else none (the trainer's model
// is the last epoch's).
Result<std::optional<train::Checkpoint>> BestCheckpoint(const train::TrainOptions& t) {
  if (t.checkpoint_path.empty() || !std::filesystem::exists(t.checkpoint_path)) {
    return std::optional<train::Checkpoint>();
  }
  SKIFF_ASSIGN_OR_RETURN(train::Checkpoint best, train::ReadCheckpoint(t.checkpoint_path));
  return std::optional<train::Checkpoint>(std::move(best));
}

// With --export, writes the predictions of the best model (or the last epoch's, without
// --checkpoint) as `inference` says (tools/skiff/inference.h). Layer by layer, the run's trainer
// and partitions (`trainer`, `engine`) are freed first, since the dataset is loaded again for it:
// the run's copy and that one are never held together (1m preset: peak RSS 3.77 -> 2.80 GiB).
Status Export(const TrainCliOptions& o, const format::Dataset& ds, const train::TrainOptions& t,
              int64_t last_epoch, Inference inference, std::unique_ptr<train::Trainer> trainer,
              std::unique_ptr<pipeline::OutOfCoreTraining> engine) {
  if (o.export_dir.empty()) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(std::optional<train::Checkpoint> best, BestCheckpoint(t));
  if (inference == Inference::kLayers) {
    if (!best.has_value()) {
      SKIFF_ASSIGN_OR_RETURN(best, trainer->MakeCheckpoint(last_epoch));
    }
    trainer.reset();
    engine.reset();
    SKIFF_RETURN_IF_ERROR(ExportByLayer(ds, *best, "the exported model", t, o.export_dir));
  } else {
    if (best.has_value()) SKIFF_RETURN_IF_ERROR(trainer->Restore(*best));
    SKIFF_RETURN_IF_ERROR(train::ExportPredictions(ds, *trainer, o.export_dir));
  }
  std::printf("predictions and embeddings: %s\n", o.export_dir.c_str());
  return Status::Ok();
}

// --disk-bandwidth: bytes per second ("1.4GiB/s", "1.4GiB" or a plain number), > 0.
Result<double> ParseDiskBandwidth(const std::string& text) {
  std::string bytes = text;
  if (bytes.size() > 2 && (bytes.ends_with("/s") || bytes.ends_with("/S")))
    bytes.resize(bytes.size() - 2);
  uint64_t rate = 0;
  if (!ParseBytes(bytes, &rate) || rate == 0) {
    return Status::InvalidArgument("--disk-bandwidth: '" + text +
                                   "' is not a read rate above zero (e.g. 1.4GiB/s)");
  }
  return static_cast<double>(rate);
}

// The batch engine of the run: the pipeline (docs/pipeline.md). Without a budget every partition
// is resident (the in-memory run); with one, a partition buffer within the budget and fine-grained
// reads for the rest. Logs what it opened, and the memory plan with a budget.
Result<std::unique_ptr<pipeline::OutOfCoreTraining>> OpenEngine(const TrainCliOptions& o,
                                                                const train::TrainOptions& t,
                                                                uint64_t memory_bytes,
                                                                const pipeline::ComputeSite& site,
                                                                format::Dataset* ds) {
  SKIFF_ASSIGN_OR_RETURN(const pipeline::SamplingMode sampling,
                         pipeline::ParseSamplingMode(o.sampling));
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<pipeline::OutOfCoreTraining> engine,
      pipeline::OpenOutOfCoreTraining(ds, t, memory_bytes, sampling, t.sampler_threads, site));
  if (memory_bytes > 0 && o.scratch_dir != "none") {
    engine->replay_dir = o.scratch_dir.empty() ? o.dataset : o.scratch_dir;
  }
  if (!o.disk_bandwidth.empty()) {
    SKIFF_ASSIGN_OR_RETURN(engine->disk_bytes_per_second, ParseDiskBandwidth(o.disk_bandwidth));
  }
  LogInfo((memory_bytes > 0 ? "out of core: " : "in memory: ") + engine->ooc->Describe());
  if (memory_bytes > 0) LogInfo(engine->ooc->memory_plan().Describe());
  return engine;
}

// What is about to be trained, on what.
void LogTraining(const std::string& dataset, const train::TrainOptions& t, size_t train_nodes,
                 model::Model& model, Device device) {
  LogInfo(std::string("training ") + model::ModelKindName(t.model.kind) + " on " + dataset + ": " +
          std::to_string(train_nodes) + " training nodes, fanouts " +
          sampler::FanoutsToString(t.fanouts) + ", " + std::to_string(model.NumParameters()) +
          " parameters, " +
          (device == Device::kCuda ? model.DeviceDescription() : cpu::BlasDescription()));
}

// What the CUDA runtime made resident, outside the budget (docs/pipeline.md): `as_loaded`, measured
// as it loaded and as the model was created, and the pages of the CUDA libraries' files touched
// since then (`cuda_files_loaded` is what they held when the model was created): kernels load as
// they are first launched. Counted to exit, after any peak.
struct CudaRuntimeShare {
  bool used = false;  // --device cuda
  uint64_t as_loaded = 0;
  uint64_t cuda_files_loaded = 0;
};

// The peak line: peak RSS, and with a budget what it is promised against (docs/pipeline.md). The
// debug log adds the resident set at exit by kind, and how much of it is file-backed pages (code
// and data of the libraries) touched since the model was created, `loaded`.
void PrintPeakRss(uint64_t memory_bytes, const CudaRuntimeShare& cuda, const RssParts& loaded) {
  const RssParts now = CurrentRssParts();
  const uint64_t cuda_files = cuda.used ? CudaLibraryFileRssBytes() : 0;
  const uint64_t kernels = std::max(cuda_files, cuda.cuda_files_loaded) - cuda.cuda_files_loaded;
  LogDebug("resident at exit: " + FormatBytes(now.anonymous) + " anonymous, " +
           FormatBytes(now.file) + " file-backed (" +
           FormatBytes(std::max(now.file, loaded.file) - loaded.file) +
           " touched since the model was created, " + FormatBytes(kernels) +
           " of them the CUDA libraries'), " + FormatBytes(now.shared) + " shared");
  if (memory_bytes == 0) {
    std::printf("peak RSS %s\n", FormatBytes(PeakRssBytes()).c_str());
    return;
  }
  const std::string runtime = cuda.used
                                  ? " + CUDA runtime " + FormatBytes(cuda.as_loaded + kernels) +
                                        ": " + FormatBytes(cuda.as_loaded) + " as loaded, " +
                                        FormatBytes(kernels) + " of kernels loaded since"
                                  : "";
  std::printf("peak RSS %s (budget %s + fixed overhead %s%s)\n",
              FormatBytes(PeakRssBytes()).c_str(), FormatBytes(memory_bytes).c_str(),
              FormatBytes(pipeline::kFixedOverheadBytes).c_str(), runtime.c_str());
}

void PrintLinkSummary(const train::LinkSummary& summary, const train::TrainOptions& t) {
  double seconds = 0;
  for (const auto& e : summary.epochs) seconds += e.epoch_seconds;
  std::printf("trained %zu epochs in %s; best epoch %lld\n", summary.epochs.size(),
              FormatSeconds(seconds).c_str(), static_cast<long long>(summary.best_epoch));
  for (const auto& [name, e] :
       {std::pair<const char*, const train::LinkEvaluation&>{"valid", summary.best_valid},
        {"test", summary.best_test}}) {
    std::printf("%s (%lld edges):", name, static_cast<long long>(e.edges));
    if (e.has_non_edges) {
      std::printf(" AUC %.2f%%  AP %.2f%%", 100 * e.auc, 100 * e.ap);
      for (size_t k = 0; k < train::kSharedHitsAt.size(); ++k) {
        std::printf("  Hits@%d(non-edges) %.2f%%", train::kSharedHitsAt[k], 100 * e.shared_hits[k]);
      }
    }
    if (e.ranking.count > 0) {
      std::printf("  MRR %.4f", e.ranking.mrr);
      for (size_t k = 0; k < train::kHitsAt.size(); ++k) {
        std::printf("  Hits@%d %.2f%%", train::kHitsAt[k], 100 * e.ranking.hits[k]);
      }
    }
    std::printf("\n");
  }
  if (!t.checkpoint_path.empty() && summary.best_epoch >= 0) {
    std::printf("best model: %s\n", t.checkpoint_path.c_str());
  }
}

// What a step takes in a run of `ranks` ranks with --accumulate `accumulate`, for the log.
std::string DescribeSteps(int ranks, int accumulate, int gpus = 1) {
  const int replicas = ranks * gpus;
  const std::string per_step =
      std::to_string(replicas * accumulate) + " batches per optimiser step";
  if (replicas == 1) return per_step;
  return per_step + ", " + std::to_string(accumulate) + " from each of " +
         std::to_string(replicas) + (ranks > 1 ? " ranks" : " GPUs");
}

// Rank 0 of a data-parallel run prints; the others' progress and log lines would repeat its.
void QuietUnlessLead(bool lead, train::TrainOptions* t) {
  t->show_progress = t->show_progress && lead;
  if (!lead && GetLogLevel() < LogLevel::kWarning) SetLogLevel(LogLevel::kWarning);
}

// The model an --export on several ranks predicts with, on every rank: the best one when rank 0's
// --checkpoint kept it (rank 0 sends its parameters, since only rank 0 writes checkpoints), else
// the last epoch's, which every rank already holds.
// `model` is this rank's last epoch's (MakeCheckpoint).
Result<train::Checkpoint> LeadsExportModel(const train::TrainOptions& t, train::Checkpoint model,
                                           dist::Communicator& comm) {
  std::string values;  // the best model's parameters, back to back; empty: the last epoch's
  if (comm.rank() == 0) {
    SKIFF_ASSIGN_OR_RETURN(std::optional<train::Checkpoint> best, BestCheckpoint(t));
    if (best.has_value()) {
      model = std::move(*best);
      for (const train::CheckpointTensor& p : model.parameters) {
        values.append(reinterpret_cast<const char*>(p.values.data()),
                      p.values.size() * sizeof(float));
      }
    }
  }
  SKIFF_RETURN_IF_ERROR(comm.Broadcast(&values, 0, "the exported model"));
  if (values.empty()) return model;
  size_t count = 0;
  for (const train::CheckpointTensor& p : model.parameters) count += p.values.size();
  if (values.size() != count * sizeof(float)) {
    return Status::InvalidArgument(t.checkpoint_path + ": rank 0's best model has " +
                                   std::to_string(values.size() / sizeof(float)) +
                                   " parameters, this rank's model " + std::to_string(count));
  }
  size_t at = 0;
  for (train::CheckpointTensor& p : model.parameters) {
    std::memcpy(p.values.data(), values.data() + at, p.values.size() * sizeof(float));
    at += p.values.size() * sizeof(float);
  }
  return model;
}

// With --export, the encoder's output for every node (tools/skiff/link_predict.h) from the best
// model when --checkpoint kept it, else from the last epoch's (LeadsExportModel); the ranks of a
// data-parallel run share the encoding batches and rank 0 writes.
Status ExportLink(const TrainCliOptions& o, const format::Dataset& ds, const train::TrainOptions& t,
                  int64_t last_epoch, const pipeline::OutOfCoreLink& engine,
                  train::LinkTrainer& trainer, dist::Communicator& comm) {
  if (o.export_dir.empty()) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  SKIFF_ASSIGN_OR_RETURN(train::Checkpoint last, trainer.MakeCheckpoint(last_epoch));
  SKIFF_ASSIGN_OR_RETURN(const train::Checkpoint model, LeadsExportModel(t, std::move(last), comm));
  SKIFF_RETURN_IF_ERROR(trainer.Restore(model).WithContext(t.checkpoint_path));
  SKIFF_RETURN_IF_ERROR(
      ExportLinkEmbeddings(ds, trainer, engine.ooc->eval_batch_size(), o.export_dir, &comm));
  if (comm.rank() != 0) return Status::Ok();
  if (comm.size() == 1) {
    std::printf("embeddings: %s\n", o.export_dir.c_str());
  } else {
    std::printf("embeddings: %s (every node, on %d ranks, in %.2f s)\n", o.export_dir.c_str(),
                comm.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Status::Ok();
}

// `skiff train --task link`: link prediction (train/link_trainer.h) through the pipeline, with
// every partition resident or within --memory (pipeline/link_passes.h); checkpoints, --resume and
// --export as for node classification (the export: embeddings, no classes).
Status TrainLink(const TrainCliOptions& o, train::TrainOptions t, Device device,
                 const std::optional<train::Checkpoint>& resume, dist::Communicator& comm) {
  const bool lead = comm.rank() == 0;
  QuietUnlessLead(lead, &t);
  if (lead) SKIFF_RETURN_IF_ERROR(CheckOutputs(o, t));
  if (t.micro_batches > 1) {
    return Status::InvalidArgument(
        "--micro-batches cuts node classification's batches; --task link computes whole batches");
  }
  SKIFF_RETURN_IF_ERROR(CheckDeviceOptions(device, t));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<format::Dataset> ds, format::Dataset::Open(o.dataset));
  SKIFF_RETURN_IF_ERROR(train::CheckLinkLoss(t, ds->manifest().num_nodes));  // before any load
  if (comm.size() > 1) SKIFF_RETURN_IF_ERROR(CheckSameRun(comm, *ds, t));
  SKIFF_ASSIGN_OR_RETURN(const uint64_t memory_bytes, ParseMemoryOption(o.memory));
  const auto& split = ds->manifest().link_split;
  SKIFF_ASSIGN_OR_RETURN(const pipeline::SamplingMode sampling,
                         pipeline::ParseSamplingMode(o.sampling));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::OutOfCoreLink> engine,
                         pipeline::OpenOutOfCoreLink(ds.get(), t, memory_bytes, sampling,
                                                     t.sampler_threads, device == Device::kCpu));
  if (!o.disk_bandwidth.empty()) {
    SKIFF_ASSIGN_OR_RETURN(engine->disk_bytes_per_second, ParseDiskBandwidth(o.disk_bandwidth));
  }
  LogInfo((memory_bytes > 0 ? "out of core: " : "in memory: ") + engine->ooc->Describe());
  if (memory_bytes > 0) LogInfo(engine->ooc->memory_plan().Describe());
  // A CUDA rank takes the GPU of its rank on its machine, as for node classification.
  int slot = 0;
  if (device == Device::kCuda && comm.size() > 1) {
    SKIFF_ASSIGN_OR_RETURN(slot, LocalRank(comm));
  }
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<train::LinkTrainer> trainer,
      train::LinkTrainer::Create(engine->data, t, ModelFactoryFor(device, slot)));
  SKIFF_RETURN_IF_ERROR(trainer->SetCommunicator(&comm));
  trainer->SetPassRunner(pipeline::MakeOutOfCoreLinkRunner(engine.get(), t, t.show_progress));
  trainer->SetEvalBatchEdges(engine->eval_batch_edges);
  trainer->SetCandidateChunkBytes(engine->candidate_chunk_bytes);
  SKIFF_RETURN_IF_ERROR(
      OfferLinkFeaturesToDevice(device, memory_bytes, t.device_memory_bytes, trainer.get()));
  if (resume.has_value()) {
    SKIFF_RETURN_IF_ERROR(trainer->Restore(*resume).WithContext(o.resume));
    LogInfo("resuming after epoch " + std::to_string(resume->epoch) + " from " + o.resume);
  }
  const RssParts resident_when_loaded = CurrentRssParts();
  if (comm.size() > 1 || t.accumulate > 1) LogInfo(DescribeSteps(comm.size(), t.accumulate));
  LogInfo(
      std::string("training ") + model::ModelKindName(t.model.kind) + " + " +
      NameOf(model::kDecoderKindNames, t.link.decoder) + " decoder for link prediction on " +
      o.dataset + ": " + std::to_string(split->train) + " training edges, " +
      std::to_string(t.link.negatives) + " " +
      NameOf(train::kNegativeSamplerNames, t.link.negative_sampler) +
      " negatives per batch, fanouts " + sampler::FanoutsToString(t.fanouts) + ", " +
      std::to_string(trainer->model().NumParameters()) + " encoder parameters, " +
      (device == Device::kCuda ? trainer->model().DeviceDescription() : cpu::BlasDescription()));
  SKIFF_ASSIGN_OR_RETURN(const train::LinkSummary summary, trainer->Run());
  if (lead) PrintLinkSummary(summary, t);
  SKIFF_RETURN_IF_ERROR(ExportLink(o, *ds, t, static_cast<int64_t>(summary.epochs.size()) - 1,
                                   *engine, *trainer, comm));
  SKIFF_RETURN_IF_ERROR(LogRankPeaks(comm, memory_bytes));  // after the export: covering it
  if (!lead) return Status::Ok();
  PrintPeakRss(memory_bytes, CudaRuntimeShare{.used = device == Device::kCuda},
               resident_when_loaded);
  return Status::Ok();
}

// --resume's checkpoint into the trainer; rank 0 says so.
// Ranks sample exactly out of core: in-buffer sampling follows one process's buffer states.
Status CheckRankSampling(const TrainCliOptions& o, uint64_t memory_bytes) {
  if (memory_bytes == 0 || o.sampling == "exact") return Status::Ok();
  return Status::InvalidArgument(
      "--sampling " + o.sampling +
      " follows one process's buffer states; data-parallel ranks draw the in-memory plan's "
      "batches out of core: use --sampling exact");
}

Status RestoreForRun(train::Trainer& trainer, const std::optional<train::Checkpoint>& resume,
                     const std::string& path, bool lead) {
  if (!resume.has_value()) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(trainer.Restore(*resume).WithContext(path));
  if (lead) LogInfo("resuming after epoch " + std::to_string(resume->epoch) + " from " + path);
  return Status::Ok();
}

// Rank 0's line after an export on ranks.
void PrintRanksExport(const std::string& dir, const char* how, const dist::Communicator& comm,
                      std::chrono::steady_clock::time_point start) {
  if (comm.rank() != 0) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("predictions and embeddings: %s (every node, %s on %d rank(s), in %.2f s)\n",
              dir.c_str(), how, comm.size(), seconds);
}

// --export of a replicated run, shared by the ranks, with the model of LeadsExportModel. Layer by
// layer (in memory on the CPU): once the run's trainer and partitions are freed, every rank loads
// the dataset in memory and they share each layer (ExportByLayer with `comm`). In batches (within
// --memory, on GPUs): each rank predicts its share of the one-process plan's batches through its
// pipeline (Trainer::Predict). Rank 0 writes.
Status ExportReplicated(const TrainCliOptions& o, const format::Dataset& ds,
                        const train::TrainOptions& t, int64_t last_epoch, Inference inference,
                        std::unique_ptr<train::Trainer> trainer,
                        std::unique_ptr<pipeline::OutOfCoreTraining> engine,
                        dist::Communicator& comm) {
  if (o.export_dir.empty()) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  SKIFF_ASSIGN_OR_RETURN(train::Checkpoint last, trainer->MakeCheckpoint(last_epoch));
  SKIFF_ASSIGN_OR_RETURN(const train::Checkpoint model, LeadsExportModel(t, std::move(last), comm));
  if (inference == Inference::kLayers) {
    trainer.reset();
    engine.reset();
    SKIFF_RETURN_IF_ERROR(ExportByLayer(ds, model, "the exported model", t, o.export_dir, &comm));
  } else {
    SKIFF_RETURN_IF_ERROR(trainer->Restore(model).WithContext(t.checkpoint_path));
    auto predict = [&](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                       std::vector<float>* embeddings) {
      return trainer->Predict(nodes, classes, embeddings);
    };
    SKIFF_RETURN_IF_ERROR(ExportOnRanks(ds, comm, predict, o.export_dir));
  }
  PrintRanksExport(o.export_dir, inference == Inference::kLayers ? "layer by layer" : "in batches",
                   comm, start);
  return Status::Ok();
}

// A data-parallel run over several ranks (--distributed): each rank its own pipeline over the
// dataset (every partition resident, or within --memory), fed its share of every pass's batches
// (train/trainer.h), rank 0 alone printing and writing. Every rank checks first that all hold the
// same dataset and options.
Status TrainReplicated(const TrainCliOptions& o, train::TrainOptions t, Device device,
                       format::Dataset* ds, uint64_t memory_bytes,
                       const std::optional<train::Checkpoint>& resume, dist::Communicator& comm) {
  const bool lead = comm.rank() == 0;
  QuietUnlessLead(lead, &t);
  SKIFF_RETURN_IF_ERROR(CheckSameRun(comm, *ds, t));
  SKIFF_RETURN_IF_ERROR(CheckRankSampling(o, memory_bytes));
  // A CUDA rank takes the GPU of its rank on its machine (mod the machine's GPUs).
  int slot = 0;
  if (device == Device::kCuda) {
    SKIFF_ASSIGN_OR_RETURN(slot, LocalRank(comm));
  }
  CudaRuntimeShare cuda{.used = device == Device::kCuda};
  SKIFF_ASSIGN_OR_RETURN(const pipeline::ComputeSite site,
                         ComputeSiteFor(device, ds->manifest(), t, &cuda.as_loaded));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::OutOfCoreTraining> engine,
                         OpenEngine(o, t, memory_bytes, site, ds));
  const uint64_t rss_before_model = CurrentRssBytes();
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer,
                         train::Trainer::Create(engine->data, t, ModelFactoryFor(device, slot)));
  if (device == Device::kCuda) {
    cuda.as_loaded += std::max(CurrentRssBytes(), rss_before_model) - rss_before_model;
    cuda.cuda_files_loaded = CudaLibraryFileRssBytes();
  }
  SKIFF_RETURN_IF_ERROR(trainer->SetCommunicator(&comm));
  pipeline::AttachOutOfCore(trainer.get(), engine.get(), t, t.show_progress);
  SKIFF_RETURN_IF_ERROR(OfferFeaturesToDevice(site, memory_bytes, trainer.get()));
  SKIFF_RETURN_IF_ERROR(RestoreForRun(*trainer, resume, o.resume, lead));
  if (lead) {
    LogTraining(o.dataset, t, engine->data.train.size(), trainer->model(), device);
    LogInfo(DescribeSteps(comm.size(), t.accumulate));
    if (device == Device::kCuda) {
      LogInfo(
          "each rank trains on the GPU of its rank on its machine (mod the machine's GPUs); "
          "gradients are summed on the host through MPI");
    }
  }
  const RssParts resident_when_loaded = CurrentRssParts();
  SKIFF_ASSIGN_OR_RETURN(const train::TrainSummary summary, trainer->Run());
  SKIFF_ASSIGN_OR_RETURN(const Inference inference,
                         ResolveInference(Inference::kAuto, device, memory_bytes));
  const int64_t last_epoch = static_cast<int64_t>(summary.epochs.size()) - 1;
  if (lead) PrintSummary(summary, t);
  SKIFF_RETURN_IF_ERROR(ExportReplicated(o, *ds, t, last_epoch, inference, std::move(trainer),
                                         std::move(engine), comm));
  SKIFF_RETURN_IF_ERROR(LogRankPeaks(comm, memory_bytes));  // after the export: covering it
  if (!lead) return Status::Ok();
  PrintPeakRss(memory_bytes, cuda, resident_when_loaded);
  return Status::Ok();
}

// Prints, on rank 0, what the ranks' exchanges moved over the run (summed over the ranks).
Status ReportExchanges(dist::Communicator& comm, const train::OwnedData& data) {
  const train::ExchangeTraffic& g = data.graph->traffic();
  const train::ExchangeTraffic& f = data.features->traffic();
  int64_t totals[4] = {g.rows_fetched, static_cast<int64_t>(g.bytes_received), f.rows_fetched,
                       static_cast<int64_t>(f.bytes_received)};
  SKIFF_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(totals, 4), "exchange totals"));
  if (comm.rank() != 0) return Status::Ok();
  LogInfo(
      "owned partitions, over the run (training and evaluation): the ranks fetched the "
      "picks of " +
      std::to_string(totals[0]) + " remote nodes (" +
      FormatBytes(static_cast<uint64_t>(totals[1])) + ") and " + std::to_string(totals[2]) +
      " feature rows (" + FormatBytes(static_cast<uint64_t>(totals[3])) + ") from each other");
  return Status::Ok();
}

// Rank 0's lines about an owned-partition run: the training options and who owns what.
void LogOwnedRun(const TrainCliOptions& o, const train::TrainOptions& t,
                 const train::OwnedData& data, train::Trainer& trainer, int ranks) {
  LogTraining(o.dataset, t, data.data.train.size(), trainer.model(), Device::kCpu);
  std::string owners;
  for (int r = 0; r < ranks; ++r) {
    owners += (r > 0 ? ", " : "") + std::string("rank ") + std::to_string(r) + " [" +
              std::to_string(data.ranges->begin(r)) + ", " + std::to_string(data.ranges->end(r)) +
              ")";
  }
  LogInfo(std::to_string(ranks) +
          " rank(s), owned partitions: each plan batch is split by who owns its seeds; nodes "
          "owned: " +
          owners);
}

// --export of an owned-partition run: the ranks predict with the model of LeadsExportModel
// (PredictOwnedRanks), and rank 0 writes every node's row (train/export.h).
Status ExportOwned(const TrainCliOptions& o, const format::Dataset& ds,
                   const train::TrainOptions& t, int64_t last_epoch, uint64_t memory_bytes,
                   OwnedRank& rank, dist::Communicator& comm) {
  if (o.export_dir.empty()) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  SKIFF_ASSIGN_OR_RETURN(train::Checkpoint last, rank.trainer->MakeCheckpoint(last_epoch));
  SKIFF_ASSIGN_OR_RETURN(const train::Checkpoint model, LeadsExportModel(t, std::move(last), comm));
  SKIFF_RETURN_IF_ERROR(rank.trainer->Restore(model).WithContext(t.checkpoint_path));
  // As one process's auto choice: layer by layer in memory, in batches within --memory.
  const bool by_layer = memory_bytes == 0;
  SKIFF_RETURN_IF_ERROR(PredictOwnedRanks(ds, rank, by_layer, o.export_dir, comm));
  PrintRanksExport(o.export_dir, by_layer ? "layer by layer" : "in batches", comm, start);
  return Status::Ok();
}

// --ownership partitions: each rank loads its range of the dataset's partitions (train/
// owned_data.h; within --memory, through its buffer pool) and trains its part of every plan
// batch; rank 0 alone prints and writes.
Status TrainOwned(const TrainCliOptions& o, train::TrainOptions t, format::Dataset* ds,
                  uint64_t memory_bytes, const std::optional<train::Checkpoint>& resume,
                  dist::Communicator& comm) {
  const bool lead = comm.rank() == 0;
  QuietUnlessLead(lead, &t);
  SKIFF_RETURN_IF_ERROR(CheckSameRun(comm, *ds, t));
  SKIFF_RETURN_IF_ERROR(CheckRankSampling(o, memory_bytes));
  SKIFF_ASSIGN_OR_RETURN(OwnedRank rank, OpenOwnedRank(ds, t, memory_bytes, comm));
  train::Trainer* trainer = rank.trainer.get();
  const pipeline::DiskOwnedRows* disk = rank.disk;
  DigestFile digest("--batch-digest");  // PATH.RANK, each rank its own
  if (!o.batch_digest.empty()) {
    SKIFF_RETURN_IF_ERROR(digest.Open(o.batch_digest + "." + std::to_string(comm.rank())));
    trainer->SetBatchDigest([&digest](const std::string& line) { return digest.Write(line); });
  }
  SKIFF_RETURN_IF_ERROR(RestoreForRun(*trainer, resume, o.resume, lead));
  if (lead) {
    LogOwnedRun(o, t, *rank.data, *trainer, comm.size());
    if (disk != nullptr) {
      LogInfo("rank 0 within --memory: " + disk->Describe() + "\n" +
              disk->memory_plan().Describe());
    }
  }
  const RssParts resident_when_loaded = CurrentRssParts();
  SKIFF_ASSIGN_OR_RETURN(const train::TrainSummary summary, trainer->Run());
  SKIFF_RETURN_IF_ERROR(digest.Close());
  SKIFF_RETURN_IF_ERROR(ReportExchanges(comm, *rank.data));
  if (lead && disk != nullptr) LogInfo("rank 0 within --memory: " + disk->ReadReport());
  if (lead) PrintSummary(summary, t);
  SKIFF_RETURN_IF_ERROR(ExportOwned(o, *ds, t, static_cast<int64_t>(summary.epochs.size()) - 1,
                                    memory_bytes, rank, comm));
  // After the export, so that the peaks cover it.
  SKIFF_RETURN_IF_ERROR(LogRankPeaks(comm, memory_bytes));
  if (!lead) return Status::Ok();
  PrintPeakRss(memory_bytes, CudaRuntimeShare{}, resident_when_loaded);
  return Status::Ok();
}

Status Train(const TrainCliOptions& o, dist::Communicator& comm) {
  SKIFF_ASSIGN_OR_RETURN(const Device device, ParseName(kDeviceNames, "device", o.device));
  std::optional<train::Checkpoint> resume;
  if (!o.resume.empty()) {
    SKIFF_ASSIGN_OR_RETURN(resume, ReadResumeCheckpoint(o.resume));
  }
  SKIFF_ASSIGN_OR_RETURN(train::TrainOptions t, OptionsOf(o, resume));
  if (resume.has_value()) {
    SKIFF_RETURN_IF_ERROR(CheckResumeWorldSize(t.world_size, comm.size(), o.resume));
  }
  t.world_size = comm.size();
  SKIFF_ASSIGN_OR_RETURN(const uint64_t memory_bytes, ParseMemoryOption(o.memory));
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int> gpus, ParseGpuList(o.gpus));
  SKIFF_RETURN_IF_ERROR(CheckStepOptions(t, comm.size(), device, gpus));
  if (t.task == train::Task::kLink) return TrainLink(o, t, device, resume, comm);
  // The outputs are rank 0's, on its machine: the other ranks write nothing.
  if (comm.rank() == 0) SKIFF_RETURN_IF_ERROR(CheckOutputs(o, t));
  SKIFF_RETURN_IF_ERROR(CheckDeviceOptions(device, t));
  // A directory of shards (skiff shard) gives each rank its own.
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<format::Dataset> ds,
                         OpenRankDataset(o.dataset, comm.rank()));
  if (t.ownership == train::Ownership::kPartitions) {
    SKIFF_RETURN_IF_ERROR(CheckRankShard(*ds, comm.rank(), comm.size()));
    return TrainOwned(o, t, ds.get(), memory_bytes, resume, comm);
  }
  SKIFF_RETURN_IF_ERROR(ds->RequireWhole("training without --ownership partitions"));
  if (!o.batch_digest.empty()) {
    return Status::InvalidArgument("--batch-digest applies to --ownership partitions");
  }
  if (comm.size() > 1) return TrainReplicated(o, t, device, ds.get(), memory_bytes, resume, comm);

  // The CUDA runtime's resident pages are outside the budget (docs/pipeline.md): measured as it
  // loads (here, and as the model creates its context), then its libraries' pages to exit, and
  // reported with the peak.
  CudaRuntimeShare cuda{.used = device == Device::kCuda};
  SKIFF_ASSIGN_OR_RETURN(pipeline::ComputeSite site,
                         ComputeSiteFor(device, ds->manifest(), t, &cuda.as_loaded));
  site.device_replicas = static_cast<int>(std::max<size_t>(gpus.size(), 1));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<pipeline::OutOfCoreTraining> engine,
                         OpenEngine(o, t, memory_bytes, site, ds.get()));
  // The CUDA model loads cuBLAS and creates its streams and buffers.
  const uint64_t rss_before_model = CurrentRssBytes();
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<train::Trainer> trainer,
      train::Trainer::Create(engine->data, t, TrainingModelFactory(device, gpus, t.accumulate)));
  if (device == Device::kCuda) {
    cuda.as_loaded += std::max(CurrentRssBytes(), rss_before_model) - rss_before_model;
    cuda.cuda_files_loaded = CudaLibraryFileRssBytes();
  }
  const RssParts resident_when_loaded = CurrentRssParts();
  pipeline::AttachOutOfCore(trainer.get(), engine.get(), t, t.show_progress);
  SKIFF_RETURN_IF_ERROR(OfferFeaturesToDevice(site, memory_bytes, trainer.get()));
  if (resume.has_value()) {
    SKIFF_RETURN_IF_ERROR(trainer->Restore(*resume).WithContext(o.resume));
    LogInfo("resuming after epoch " + std::to_string(resume->epoch) + " from " + o.resume);
  }
  LogTraining(o.dataset, t, engine->data.train.size(), trainer->model(), device);
  if (t.accumulate > 1 || gpus.size() > 1) {
    LogInfo(DescribeSteps(1, t.accumulate, static_cast<int>(std::max<size_t>(gpus.size(), 1))));
  }
  SKIFF_ASSIGN_OR_RETURN(const train::TrainSummary summary, trainer->Run());
  SKIFF_ASSIGN_OR_RETURN(const Inference inference,
                         ResolveInference(Inference::kAuto, device, memory_bytes));
  PrintSummary(summary, t);
  SKIFF_RETURN_IF_ERROR(Export(o, *ds, t, static_cast<int64_t>(summary.epochs.size()) - 1,
                               inference, std::move(trainer), std::move(engine)));
  // Last, so that it covers the export too (what is left is freeing memory, which cannot raise it).
  PrintPeakRss(memory_bytes, cuda, resident_when_loaded);
  return Status::Ok();
}

// One process, or (--distributed) one rank of an mpirun job: a rank whose run fails ends the
// whole job (Communicator::Abort), so that no rank waits for it.
int RunTrain(const TrainCliOptions& o) {
  if (!o.distributed) return ReportStatus("train", Train(o, *dist::CreateLocalCommunicator()));
  auto comm = dist::CreateMpiCommunicator({.timeout_seconds = o.dist_timeout});
  if (!comm.ok()) return ReportStatus("train", comm.status().WithContext("--distributed"));
  const Status status = Train(o, **comm);
  if (!status.ok() && (*comm)->size() > 1) (*comm)->Abort(status.WithContext("skiff train"));
  return ReportStatus("train", status);
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<TrainCliOptions>();
  app.description(
      "Train a GNN (GraphSAGE, GCN or GAT) for node classification, or with --task link for link "
      "prediction");
  app.add_option("--config", o->config, "Read options from a TOML file (keys: long option names)")
      ->check(NonEmpty());
  app.add_option("dataset", o->dataset, "Dataset directory")->required();
  app.add_option("--device", o->device, "Compute stage: cpu or cuda")
      ->capture_default_str()
      ->check(StatusCheck(
          [](const std::string& text) { return ParseName(kDeviceNames, "device", text).status(); },
          "NAME"));
  app.add_option("--gpus", o->gpus,
                 "With --device cuda: train a model replica on each listed GPU (0,1,...), "
                 "gradients summed with NCCL, one optimiser step per batch of every GPU "
                 "(docs/cuda.md)")
      ->check(
          StatusCheck([](const std::string& text) { return ParseGpuList(text).status(); }, "LIST"));
  AddTrainFlags(app, &o->flags);
  app.add_option("--threads", o->threads, "Compute threads (0 = all)")
      ->capture_default_str()
      ->check(ThreadCount());
  app.add_option("--sampler-threads", o->sampler_threads, "Sampler threads (0 = --threads)")
      ->check(ThreadCount());
  app.add_option("--resume", o->resume, "Continue from a checkpoint")->check(NonEmpty());
  app.add_option("--export", o->export_dir,
                 "Write predictions and embeddings (.npy) here (--task link: embeddings)")
      ->check(NonEmpty());
  app.add_option("--memory", o->memory,
                 "Train out of core within this memory budget (e.g. 4GiB; see docs/pipeline.md)")
      ->check(NonEmpty());
  app.add_option("--sampling", o->sampling,
                 "Out of core: exact (read non-resident neighbours) or in-buffer "
                 "(neighbours outside the buffer are dropped: approximate, no fine reads)")
      ->capture_default_str()
      ->check(StatusCheck(
          [](const std::string& text) { return pipeline::ParseSamplingMode(text).status(); },
          "NAME"));
  app.add_option("--scratch-dir", o->scratch_dir,
                 "Out of core: where evaluation keeps its batches to replay them in later epochs "
                 "(an unnamed file, gone when the run ends; default: the dataset's directory; "
                 "none: sample and gather them again every epoch)")
      ->check(NonEmpty());
  app.add_option(
         "--disk-bandwidth", o->disk_bandwidth,
         "Out of core: the disk's sequential read rate (e.g. 1.4GiB/s, as skiff iobench raw "
         "FILE --pattern seq --bs 1MiB measures it), for the physical-limit line of each "
         "pass's report")
      ->check(StatusCheck([](const std::string& text) { return ParseDiskBandwidth(text).status(); },
                          "RATE"));
  app.add_flag("--distributed", o->distributed,
               "Train data-parallel as one rank of an mpirun job: mpirun -np W skiff train DS "
               "--distributed ... (docs/distributed.md)");
  app.add_option("--batch-digest", o->batch_digest,
                 "--ownership partitions: each rank writes a checksum line per training batch "
                 "part to PATH.RANK (compare with skiff ownership --digest)");
  app.add_option("--dist-timeout", o->dist_timeout,
                 "--distributed: seconds a rank waits for the others in one exchange before the "
                 "job ends with an error naming the silent ranks")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI::App* app_ptr = &app;
  return [o, app_ptr] {
    if (!o->config.empty()) {
      if (Status st = ApplyConfigFile(*app_ptr, o->config); !st.ok()) {
        return ReportStatus("train", st);
      }
    }
    o->given = GivenIn(*app_ptr);
    return RunTrain(*o);
  };
}

}  // namespace
SKIFF_REGISTER_COMMAND(train, 50, Setup);
}  // namespace skiff::cli
