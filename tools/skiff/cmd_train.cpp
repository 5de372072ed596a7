// `skiff train DATASET [options]`: mini-batch GNN training (see docs/training.md).
// Options may also come from a TOML file: `--config run.toml` (keys are the long option names).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/process.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/export.h"
#include "skiff/train/trainer.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/config_file.h"
#include "tools/skiff/output_paths.h"

namespace skiff::cli {
namespace {

struct TrainCliOptions {
  std::string dataset;
  std::string model = "sage";
  int layers = 2;
  int64_t hidden = 256;
  std::string fanouts = "15,10";
  std::string eval_fanouts;
  int64_t batch_size = 1024;
  int epochs = 10;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  std::string weight_decay_scope = "all";
  float dropout = 0.5f;
  int heads = 4;
  std::string activation = "relu";
  std::string norm = "none";
  std::string feature_norm = "none";
  uint64_t seed = 0;
  int threads = 0;
  int sampler_threads = 0;
  std::string optimizer = "adam";
  std::string device = "cpu";  // compute stage: "cpu" or "cuda"
  std::string cuda_matmul = "tf32";
  std::string device_memory;  // features on the device within this (default: free less a margin)
  std::string checkpoint, resume, metrics, export_dir;
  std::string config;
  std::string memory;              // out of core when set (docs/pipeline.md)
  std::string sampling = "exact";  // out of core: exact or in-buffer
  std::vector<std::string> given;  // long names of the options given (command line or --config)
};

// Options that define the model and its training run: a resumed run takes them from the
// checkpoint.
constexpr const char* kRunDefiningOptions[] = {
    "--model",    "--layers",       "--hidden",
    "--fanouts",  "--eval-fanouts", "--batch-size",
    "--lr",       "--weight-decay", "--weight-decay-scope",
    "--dropout",  "--heads",        "--activation",
    "--norm",     "--feature-norm", "--seed",
    "--optimizer"};

bool Given(const TrainCliOptions& o, const std::string& name) {
  return std::find(o.given.begin(), o.given.end(), name) != o.given.end();
}

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

// The options of a new run, from the command line.
Result<train::TrainOptions> OptionsFromFlags(const TrainCliOptions& o) {
  train::TrainOptions t;
  SKIFF_ASSIGN_OR_RETURN(t.model.kind, model::ParseModelKind(o.model));
  SKIFF_ASSIGN_OR_RETURN(t.fanouts, sampler::ParseFanouts(o.fanouts));
  t.model.num_layers = o.layers;
  t.model.hidden_dim = o.hidden;
  t.model.dropout = o.dropout;
  t.model.heads = o.heads;
  t.model.activation = o.activation;
  t.model.norm = o.norm;
  if (!o.eval_fanouts.empty()) {
    auto ef = sampler::ParseFanouts(o.eval_fanouts);
    if (!ef.ok()) return ef.status().WithContext("--eval-fanouts");
    t.eval_fanouts = *ef;
  }
  t.batch_size = o.batch_size;
  t.epochs = o.epochs;
  t.optimizer.kind = o.optimizer;
  t.optimizer.lr = o.lr;
  t.optimizer.weight_decay = o.weight_decay;
  t.optimizer.decay_scope = o.weight_decay_scope;
  t.seed = o.seed;
  if (o.feature_norm != "none" && o.feature_norm != "row") {
    return Status::InvalidArgument("--feature-norm must be none or row");
  }
  t.feature_norm = o.feature_norm;
  return t;
}

// The options of a resumed run: those saved in `resume`, with --epochs when given; the other
// options that define a run are ignored, with a warning.
Result<train::TrainOptions> OptionsFromCheckpoint(const TrainCliOptions& o,
                                                  const train::Checkpoint& resume) {
  auto saved = train::TrainOptions::FromJson(resume.config_json);
  if (!saved.ok()) return saved.status().WithContext(o.resume);
  train::TrainOptions t = *saved;
  // A resumed run may be extended with --epochs; without it, it keeps its own count.
  if (Given(o, "--epochs")) t.epochs = o.epochs;
  for (const char* name : kRunDefiningOptions) {
    if (Given(o, name)) {
      LogWarning(std::string(name) +
                 " is ignored with --resume: the run continues with the value saved in " +
                 o.resume + " (start a new run to change it)");
    }
  }
  return t;
}

// The options that may change between runs of the same training (device, threads, outputs).
Status ApplyRunOptions(const TrainCliOptions& o, train::TrainOptions* t) {
  if (o.cuda_matmul != "tf32" && o.cuda_matmul != "fp32") {
    return Status::InvalidArgument("--cuda-matmul must be tf32 or fp32 (got \"" + o.cuda_matmul +
                                   "\")");
  }
  t->model.cuda_matmul = o.cuda_matmul;
  if (!o.device_memory.empty() &&
      (!ParseBytes(o.device_memory, &t->device_memory_bytes) || t->device_memory_bytes == 0)) {
    return Status::InvalidArgument("--device-memory: expected a size such as 8GiB (got \"" +
                                   o.device_memory + "\")");
  }
  cpu::SetNumThreads(o.threads);
  t->sampler_threads = o.sampler_threads > 0 ? o.sampler_threads : std::max(1, cpu::NumThreads());
  t->checkpoint_path = o.checkpoint;
  t->metrics_path = o.metrics;
  return Status::Ok();
}

// The device's model factory (nullptr: Model::CreateCpu), after checking the outputs' paths.
Result<train::ModelFactory> CheckDeviceAndOutputs(const TrainCliOptions& o) {
  if (o.device != "cpu" && o.device != "cuda") {
    return Status::InvalidArgument("--device must be cpu or cuda (got \"" + o.device + "\")");
  }
  for (const auto& [option, path] :
       {std::pair<const char*, const std::string&>{"--metrics", o.metrics},
        {"--checkpoint", o.checkpoint},
        {"--export", o.export_dir}}) {
    SKIFF_RETURN_IF_ERROR(CheckNotInside(option, path, o.dataset));
  }
  return o.device == "cuda" ? train::ModelFactory(model::Model::CreateCuda)
                            : train::ModelFactory(nullptr);
}

// With --device cuda, every feature row goes to device memory (batches carry node IDs); out of
// core the plan counted on it (the host holds no rows), so not fitting is an error there.
Status OfferFeaturesToDevice(const TrainCliOptions& o, uint64_t memory_bytes,
                             train::Trainer* trainer) {
  if (o.device != "cuda") return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const bool held, trainer->OfferFeatures());
  if (!held && memory_bytes > 0) {
    return Status::ResourceExhausted(
        "--memory with --device cuda needs the features in device memory, and they do not fit "
        "(raise --device-memory, or use --device cpu)");
  }
  return Status::Ok();
}

// Prints the run's summary and, with --export, writes the best model's predictions.
Status Finish(const TrainCliOptions& o, const format::Dataset& ds,
              const train::TrainSummary& summary, train::Trainer* trainer) {
  double seconds = 0;
  for (const auto& e : summary.epochs) seconds += e.epoch_seconds;
  std::printf(
      "trained %zu epochs in %s; best valid accuracy %.2f%% (epoch %lld), test accuracy "
      "%.2f%%\n",
      summary.epochs.size(), FormatSeconds(seconds).c_str(), 100 * summary.best_valid_acc,
      static_cast<long long>(summary.best_epoch), 100 * summary.best_test_acc);
  if (!o.checkpoint.empty()) std::printf("best model: %s\n", o.checkpoint.c_str());
  if (o.export_dir.empty()) return Status::Ok();
  if (!o.checkpoint.empty() && std::filesystem::exists(o.checkpoint)) {
    SKIFF_ASSIGN_OR_RETURN(const train::Checkpoint best, train::ReadCheckpoint(o.checkpoint));
    SKIFF_RETURN_IF_ERROR(trainer->Restore(best));
  }
  SKIFF_RETURN_IF_ERROR(train::ExportPredictions(ds, *trainer, o.export_dir));
  std::printf("predictions and embeddings: %s\n", o.export_dir.c_str());
  return Status::Ok();
}

Status Train(const TrainCliOptions& o) {
  SKIFF_ASSIGN_OR_RETURN(const train::ModelFactory factory, CheckDeviceAndOutputs(o));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<format::Dataset> ds, format::Dataset::Open(o.dataset));
  std::optional<train::Checkpoint> resume;
  train::TrainOptions t;
  if (!o.resume.empty()) {
    SKIFF_ASSIGN_OR_RETURN(resume, ReadResumeCheckpoint(o.resume));
    SKIFF_ASSIGN_OR_RETURN(t, OptionsFromCheckpoint(o, *resume));
  } else {
    SKIFF_ASSIGN_OR_RETURN(t, OptionsFromFlags(o));
  }
  SKIFF_RETURN_IF_ERROR(ApplyRunOptions(o, &t));

  // One batch engine: the pipeline (docs/pipeline.md). Without --memory every partition is
  // resident (the in-memory run); with it, a partition buffer within the budget and fine-grained
  // reads for the rest.
  SKIFF_ASSIGN_OR_RETURN(const uint64_t memory_bytes, ParseMemoryOption(o.memory));
  SKIFF_ASSIGN_OR_RETURN(const pipeline::SamplingMode sampling,
                         pipeline::ParseSamplingMode(o.sampling));
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<pipeline::OutOfCoreTraining> engine,
      pipeline::OpenOutOfCoreTraining(ds.get(), t, memory_bytes, sampling, t.sampler_threads,
                                      /*aggregated_input=*/o.device == "cpu",
                                      /*features_on_device=*/o.device == "cuda"));
  LogInfo((memory_bytes > 0 ? "out of core: " : "in memory: ") + engine->ooc->Describe());
  if (memory_bytes > 0) LogInfo(engine->ooc->memory_plan().Describe());
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer,
                         train::Trainer::Create(engine->data, t, factory));
  trainer->SetPassRunner(pipeline::MakeOutOfCorePassRunner(engine.get(), t, t.show_progress));
  SKIFF_RETURN_IF_ERROR(OfferFeaturesToDevice(o, memory_bytes, trainer.get()));
  if (resume.has_value()) {
    SKIFF_RETURN_IF_ERROR(trainer->Restore(*resume).WithContext(o.resume));
    LogInfo("resuming after epoch " + std::to_string(resume->epoch) + " from " + o.resume);
  }
  LogInfo(std::string("training ") + model::ModelKindName(t.model.kind) + " on " + o.dataset +
          ": " + std::to_string(engine->data.train.size()) + " training nodes, fanouts " +
          sampler::FanoutsToString(t.fanouts) + ", " +
          std::to_string(trainer->model().NumParameters()) + " parameters, " +
          (o.device == "cuda" ? trainer->model().DeviceDescription() : cpu::BlasDescription()));
  SKIFF_ASSIGN_OR_RETURN(const train::TrainSummary summary, trainer->Run());
  SKIFF_RETURN_IF_ERROR(Finish(o, *ds, summary, trainer.get()));
  // Last, so that it covers the export too (what is left is freeing memory, which cannot raise it).
  if (memory_bytes > 0) {
    std::printf("peak RSS %s (budget %s + fixed overhead %s)\n",
                FormatBytes(PeakRssBytes()).c_str(), FormatBytes(memory_bytes).c_str(),
                FormatBytes(pipeline::kFixedOverheadBytes).c_str());
  } else {
    std::printf("peak RSS %s\n", FormatBytes(PeakRssBytes()).c_str());
  }
  return Status::Ok();
}

int RunTrain(const TrainCliOptions& o) { return ReportStatus("train", Train(o)); }

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<TrainCliOptions>();
  app.description("Train a GNN (GraphSAGE, GCN or GAT) for node classification");
  app.add_option("--config", o->config, "Read options from a TOML file (keys: long option names)");
  app.add_option("dataset", o->dataset, "Dataset directory")->required();
  app.add_option("--model", o->model, "sage, gcn or gat")->capture_default_str();
  app.add_option("--device", o->device, "Compute stage: cpu or cuda")->capture_default_str();
  app.add_option("--cuda-matmul", o->cuda_matmul,
                 "cuda: matrix products on TF32 tensor cores (tf32) or in exact fp32 (fp32)")
      ->capture_default_str();
  app.add_option("--device-memory", o->device_memory,
                 "cuda: keep the features in device memory when they fit in this (e.g. 8GiB; "
                 "default: the device's free memory less 1/8 of it, at least 2 GiB)");
  app.add_option("--layers", o->layers, "Number of GNN layers")->capture_default_str();
  app.add_option("--hidden", o->hidden, "Hidden width")->capture_default_str();
  app.add_option("--fanouts", o->fanouts,
                 "Neighbours sampled per layer, input layer first; -1 = all")
      ->capture_default_str();
  app.add_option("--eval-fanouts", o->eval_fanouts,
                 "Fanouts for evaluation (default: all neighbours, capped at 100 per node)");
  app.add_option("--batch-size", o->batch_size, "Seeds per mini-batch")->capture_default_str();
  app.add_option("--epochs", o->epochs, "Epochs")->capture_default_str()->check(NonNegative());
  app.add_option("--lr", o->lr, "Learning rate")->capture_default_str();
  app.add_option("--weight-decay", o->weight_decay, "L2 weight decay")->capture_default_str();
  app.add_option("--weight-decay-scope", o->weight_decay_scope,
                 "Parameters weight decay applies to: all or first-layer")
      ->capture_default_str();
  app.add_option("--dropout", o->dropout, "Dropout probability")->capture_default_str();
  app.add_option("--heads", o->heads, "GAT attention heads")->capture_default_str();
  app.add_option("--activation", o->activation, "relu or elu")->capture_default_str();
  app.add_option("--norm", o->norm, "none or layer")->capture_default_str();
  app.add_option("--feature-norm", o->feature_norm, "none or row (scale feature rows to sum 1)")
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Seed of every random stream")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--threads", o->threads, "Compute threads (0 = all)")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--sampler-threads", o->sampler_threads, "Sampler threads (0 = --threads)")
      ->check(NonNegative());
  app.add_option("--optimizer", o->optimizer, "adam or sgd")->capture_default_str();
  app.add_option("--checkpoint", o->checkpoint, "Write the best model (by valid accuracy) here");
  app.add_option("--resume", o->resume, "Continue from a checkpoint");
  app.add_option("--metrics", o->metrics, "Write per-epoch metrics as JSON lines");
  app.add_option("--export", o->export_dir, "Write predictions and embeddings (.npy) here");
  app.add_option("--memory", o->memory,
                 "Train out of core within this memory budget (e.g. 4GiB; see docs/pipeline.md)");
  app.add_option("--sampling", o->sampling,
                 "Out of core: exact (read non-resident neighbours) or in-buffer "
                 "(neighbours outside the buffer are dropped: approximate, no fine reads)")
      ->capture_default_str();
  CLI::App* app_ptr = &app;
  return [o, app_ptr] {
    if (!o->config.empty()) {
      if (Status st = ApplyConfigFile(*app_ptr, o->config); !st.ok()) {
        return ReportStatus("train", st);
      }
    }
    for (const CLI::Option* opt : app_ptr->get_options()) {
      if (opt->count() > 0) o->given.push_back(opt->get_name());
    }
    return RunTrain(*o);
  };
}

}  // namespace
SKIFF_REGISTER_COMMAND(train, 50, Setup);
}  // namespace skiff::cli
