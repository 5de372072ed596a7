// `skiff predict DATASET --checkpoint PATH --out DIR [--device cuda]`: predictions and embeddings
// of every node, computed on the CPU or (with --device cuda) on the GPU as skiff train computes.
// With a link-prediction checkpoint (`--task link`, or read from the checkpoint): the encoder's
// output for every node, the scores of --pairs, or the --top-k candidates of --nodes
// (tools/skiff/link_predict.h). With --distributed, the ranks of an mpirun job share the
// prediction of node classes, layer by layer or in batches (docs/distributed.md).
#include <algorithm>
#include <cstdio>

#include "kernels/cpu/parallel.h"
#include "skiff/dist/communicator.h"
#include "skiff/format/checksummed_file.h"
#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/pipeline/link_passes.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/train/export.h"
#include "skiff/train/link_trainer.h"
#include "skiff/train/trainer.h"
#include "tools/skiff/command.h"
#include "tools/skiff/compute_device.h"
#include "tools/skiff/distributed.h"
#include "tools/skiff/inference.h"
#include "tools/skiff/link_predict.h"
#include "tools/skiff/output_paths.h"
#include "tools/skiff/owned_run.h"
#include "tools/skiff/train_flags.h"

namespace skiff::cli {
namespace {

struct PredictOptions {
  std::string dataset, checkpoint, out;
  std::string memory;  // within this budget (out of core); empty: every partition resident
  int threads = 0;
  std::string device = "cpu";
  std::string inference = "auto";
  std::string task;  // empty: the checkpoint's
  LinkPredictRequest link;
  bool distributed = false;              // one rank of an mpirun job (docs/distributed.md)
  std::string ownership = "replicated";  // partitions: each rank predicts the nodes it owns
  double dist_timeout = 60;              // seconds a collective waits for the other ranks
  TrainFlags flags;                      // the device's session options (DeviceOptionNames)
  std::function<bool(const std::string&)> given;  // GivenIn(the command's app), once parsed
};

// In batches through the training pipeline (docs/pipeline.md): every partition resident, or within
// --memory; on the CPU or the GPU. Ranks (`comm` of several) each predict their share of the
// batches (Trainer::Predict), and rank 0 writes.
Status PredictByBatch(const PredictOptions& o, const format::Dataset& ds,
                      const train::Checkpoint& ckpt, train::TrainOptions t, Device device,
                      uint64_t memory_bytes, dist::Communicator& comm) {
  uint64_t runtime_bytes = 0;  // the CUDA runtime's, outside the budget (skiff train reports it)
  SKIFF_ASSIGN_OR_RETURN(const pipeline::ComputeSite site,
                         ComputeSiteFor(device, ds.manifest(), t, &runtime_bytes));
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<pipeline::OutOfCoreTraining> engine,
      pipeline::OpenOutOfCoreTraining(&ds, t, memory_bytes, pipeline::SamplingMode::kExact,
                                      t.sampler_threads, site));
  t.world_size = comm.size();  // this job's, not the training job's
  int slot = 0;  // a CUDA rank takes the GPU of its rank on its machine, as in training
  if (device == Device::kCuda && comm.size() > 1) {
    SKIFF_ASSIGN_OR_RETURN(slot, LocalRank(comm));
  }
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer,
                         train::Trainer::Create(engine->data, t, ModelFactoryFor(device, slot)));
  if (comm.size() > 1) SKIFF_RETURN_IF_ERROR(trainer->SetCommunicator(&comm));
  trainer->SetPassRunner(pipeline::MakeOutOfCorePassRunner(engine.get(), t, false));
  // Prediction batches in the parts the memory plan cut them into, at most the evaluation batch
  // size it allows (the batches ranks share are cut before the pass runner sees them).
  trainer->SetMicroBatches(1, engine->ooc->memory_plan().eval_part_seeds);
  trainer->SetEvalBatchLimit(engine->ooc->eval_batch_size());
  SKIFF_RETURN_IF_ERROR(OfferFeaturesToDevice(site, memory_bytes, trainer.get()));
  SKIFF_RETURN_IF_ERROR(trainer->Restore(ckpt).WithContext(o.checkpoint));
  auto predict = [&](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                     std::vector<float>* embeddings) {
    return trainer->Predict(nodes, classes, embeddings);
  };
  return ExportOnRanks(ds, comm, predict, o.out);
}

// --distributed, link prediction: InvalidArgument, on every rank alike, unless every rank planned
// encoding batches of the same size (their memory plans agree), since the ranks share one
// process's canonical batches.
Status CheckSameEncodingBatches(dist::Communicator& comm, int64_t batch_nodes) {
  if (comm.size() == 1) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                         comm.AllGather(std::to_string(batch_nodes), "encoding batch sizes"));
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    return Status::InvalidArgument("rank " + std::to_string(r) + " encodes batches of " + all[r] +
                                   " nodes but rank 0 of " + all[0] +
                                   ": give every rank the same --memory");
  }
  return Status::Ok();
}

// Link prediction: in batches through the pipeline (every partition resident, or within --memory);
// ranks of `comm` share the encoding batches (tools/skiff/link_predict.h) and rank 0 writes.
Status PredictLink(const PredictOptions& o, const format::Dataset& ds,
                   const train::Checkpoint& ckpt, const train::TrainOptions& t, Device device,
                   uint64_t memory_bytes, dist::Communicator& comm) {
  if (o.given("--inference") && o.inference == "layers") {
    return Status::InvalidArgument(
        "--inference layers: a link-prediction model predicts in batches (--inference batches)");
  }
  if (o.link.top_k > 0 && o.link.nodes_path.empty()) {
    return Status::InvalidArgument(
        "--top-k needs --nodes FILE (the query nodes, one raw ID per line)");
  }
  if (!o.link.nodes_path.empty() && o.link.top_k == 0) {
    return Status::InvalidArgument("--nodes needs --top-k K");
  }
  if (!o.link.pairs_path.empty() && o.link.top_k > 0) {
    return Status::InvalidArgument("--pairs and --top-k are separate predictions: give one");
  }
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<pipeline::OutOfCoreLink> engine,
      pipeline::OpenOutOfCoreLink(&ds, t, memory_bytes, pipeline::SamplingMode::kExact,
                                  t.sampler_threads, device == Device::kCpu));
  int slot = 0;  // a CUDA rank takes the GPU of its rank on its machine, as in training
  if (device == Device::kCuda && comm.size() > 1) {
    SKIFF_ASSIGN_OR_RETURN(slot, LocalRank(comm));
  }
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<train::LinkTrainer> trainer,
      train::LinkTrainer::Create(engine->data, t, ModelFactoryFor(device, slot)));
  trainer->SetPassRunner(pipeline::MakeOutOfCoreLinkRunner(engine.get(), t, false));
  SKIFF_RETURN_IF_ERROR(
      OfferLinkFeaturesToDevice(device, memory_bytes, t.device_memory_bytes, trainer.get()));
  SKIFF_RETURN_IF_ERROR(trainer->Restore(ckpt).WithContext(o.checkpoint));
  const int64_t batch_nodes = engine->ooc->eval_batch_size();
  SKIFF_RETURN_IF_ERROR(CheckSameEncodingBatches(comm, batch_nodes));
  SKIFF_RETURN_IF_ERROR(
      PredictLinks(ds, *trainer, *engine->data.graph, batch_nodes, o.link, o.out, &comm));
  if (comm.rank() != 0) return Status::Ok();
  std::printf("wrote %s to %s%s\n",
              !o.link.pairs_path.empty() ? "scores.npy"
              : o.link.top_k > 0         ? "top_k_ids and top_k_scores.npy"
                                         : "embeddings.npy",
              o.out.c_str(),
              comm.size() > 1 ? (" (" + std::to_string(comm.size()) + " ranks)").c_str() : "");
  return Status::Ok();
}

// The checkpoint's task, checked against --task when given.
Result<train::Task> TaskOf(const PredictOptions& o, const train::TrainOptions& t) {
  if (o.task.empty()) return t.task;
  SKIFF_ASSIGN_OR_RETURN(const train::Task asked, ParseName(train::kTaskNames, "task", o.task));
  if (asked != t.task) {
    return Status::InvalidArgument("--task " + o.task + ": checkpoint " + o.checkpoint +
                                   " is a model for --task " +
                                   std::string(NameOf(train::kTaskNames, t.task)));
  }
  return asked;
}

// --ownership partitions: each rank loads its range of the dataset's partitions (the dataset, or
// its shard) and predicts the nodes it owns; rank 0 writes every node's row (docs/distributed.md,
// "Prediction on several ranks"). On the CPU, node classification.
Status PredictOwned(const PredictOptions& o, const format::Dataset& ds,
                    const train::Checkpoint& ckpt, train::TrainOptions t, Device device,
                    Inference inference, uint64_t memory_bytes, dist::Communicator& comm) {
  if (device != Device::kCpu) {
    return Status::InvalidArgument("--ownership partitions predicts on the CPU (--device cpu)");
  }
  SKIFF_RETURN_IF_ERROR(CheckRankShard(ds, comm.rank(), comm.size()));
  t.world_size = comm.size();  // this job's, not the training job's
  SKIFF_ASSIGN_OR_RETURN(OwnedRank rank, OpenOwnedRank(&ds, t, memory_bytes, comm));
  SKIFF_RETURN_IF_ERROR(rank.trainer->Restore(ckpt).WithContext(o.checkpoint));
  SKIFF_RETURN_IF_ERROR(PredictOwnedRanks(ds, rank, inference == Inference::kLayers, o.out, comm));
  return LogRankPeaks(comm, memory_bytes);
}

// --distributed: InvalidArgument, on every rank alike, unless every rank read the same parameters
// as rank 0 (CheckSameRun compares the options a checkpoint saves, not its parameters).
Status CheckSameModel(dist::Communicator& comm, const train::Checkpoint& ckpt,
                      const std::string& path) {
  uint64_t sum = ckpt.parameters.size();
  for (const train::CheckpointTensor& p : ckpt.parameters) {
    const uint64_t part = format::Xxh3(p.values.data(), p.values.size() * sizeof(float));
    sum = sum * 0x9E3779B97F4A7C15ull + part;
  }
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                         comm.AllGather(std::to_string(sum), "the checkpoint's parameters"));
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    return Status::InvalidArgument("--checkpoint " + path + ": rank " + std::to_string(r) +
                                   " read other parameters than rank 0: every rank must read the "
                                   "same checkpoint");
  }
  return Status::Ok();
}

// One process, or (--distributed) one rank of an mpirun job whose ranks share the work: rank 0
// checks and writes --out; every rank reads the dataset and the checkpoint (the same ones:
// checked).
Status Predict(const PredictOptions& o, dist::Communicator& comm) {
  const bool lead = comm.rank() == 0;
  if (lead) {
    SKIFF_RETURN_IF_ERROR(CheckNotInside("--out", o.out, o.dataset));
    SKIFF_RETURN_IF_ERROR(CheckExportTarget("--out", o.out));
  }
  // A directory of shards (skiff shard) gives each rank its own.
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<format::Dataset> ds,
                         OpenRankDataset(o.dataset, comm.rank()));
  SKIFF_ASSIGN_OR_RETURN(const train::Checkpoint ckpt, train::ReadCheckpoint(o.checkpoint));
  auto parsed = train::TrainOptions::FromJson(ckpt.config_json);
  if (!parsed.ok()) return parsed.status().WithContext(o.checkpoint);
  train::TrainOptions& t = *parsed;
  SKIFF_ASSIGN_OR_RETURN(const Device device, ParseName(kDeviceNames, "device", o.device));
  SKIFF_RETURN_IF_ERROR(ApplyTrainFlags(o.flags, o.given, "", &t));
  SKIFF_RETURN_IF_ERROR(CheckDeviceOptions(device, t));
  cpu::SetNumThreads(o.threads);
  t.sampler_threads = std::max(1, cpu::NumThreads());
  if (!lead) t.show_progress = false;
  SKIFF_ASSIGN_OR_RETURN(const train::Task task, TaskOf(o, t));
  // Predict's own choice, whatever the training run's was.
  SKIFF_ASSIGN_OR_RETURN(t.ownership,
                         ParseName(train::kOwnershipNames, "--ownership", o.ownership));
  const bool owned = t.ownership == train::Ownership::kPartitions;
  if (owned && task != train::Task::kNode) {
    return Status::InvalidArgument(
        "--ownership partitions predicts node classes; a link-prediction checkpoint predicts "
        "with the whole dataset");
  }
  if (!owned) SKIFF_RETURN_IF_ERROR(ds->RequireWhole("prediction without --ownership partitions"));
  SKIFF_ASSIGN_OR_RETURN(const uint64_t memory_bytes, ParseMemoryOption(o.memory));
  SKIFF_ASSIGN_OR_RETURN(const Inference asked,
                         ParseName(kInferenceNames, "inference mode", o.inference));
  const Result<Inference> inference = ResolveInference(asked, device, memory_bytes);
  if (comm.size() > 1) {
    SKIFF_RETURN_IF_ERROR(CheckSameRun(comm, *ds, t));
    SKIFF_RETURN_IF_ERROR(CheckSameModel(comm, ckpt, o.checkpoint));
  }
  if (task == train::Task::kLink) return PredictLink(o, *ds, ckpt, t, device, memory_bytes, comm);
  if (!o.link.pairs_path.empty() || o.link.top_k > 0 || !o.link.nodes_path.empty()) {
    return Status::InvalidArgument(
        "--pairs, --top-k and --nodes take a link-prediction checkpoint (skiff train --task "
        "link); " +
        o.checkpoint + " classifies nodes");
  }
  if (ds->manifest().feature_dim != t.model.in_dim ||
      ds->manifest().num_classes != t.model.num_classes) {
    return Status::InvalidArgument("checkpoint " + o.checkpoint +
                                   " was trained on features/classes of another shape than " +
                                   o.dataset);
  }
  SKIFF_RETURN_IF_ERROR(inference.status());
  if (owned) {
    SKIFF_RETURN_IF_ERROR(PredictOwned(o, *ds, ckpt, t, device, *inference, memory_bytes, comm));
  } else {
    SKIFF_RETURN_IF_ERROR(*inference == Inference::kLayers
                              ? ExportByLayer(*ds, ckpt, o.checkpoint, t, o.out, &comm)
                              : PredictByBatch(o, *ds, ckpt, t, device, memory_bytes, comm));
  }
  if (lead) {
    std::printf("wrote predictions.npy and embeddings.npy for %lld nodes to %s%s\n",
                static_cast<long long>(ds->manifest().num_nodes), o.out.c_str(),
                comm.size() > 1 ? (" (" + std::to_string(comm.size()) + " ranks)").c_str() : "");
  }
  return Status::Ok();
}

// A rank whose prediction fails ends the whole job (Communicator::Abort), so that no rank waits.
int RunPredict(const PredictOptions& o) {
  if (!o.distributed) return ReportStatus("predict", Predict(o, *dist::CreateLocalCommunicator()));
  auto comm = dist::CreateMpiCommunicator({.timeout_seconds = o.dist_timeout});
  if (!comm.ok()) return ReportStatus("predict", comm.status().WithContext("--distributed"));
  const Status status = Predict(o, **comm);
  if (!status.ok() && (*comm)->size() > 1) (*comm)->Abort(status.WithContext("skiff predict"));
  return ReportStatus("predict", status);
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  app.description(
      "Write predictions and final-layer embeddings (.npy) of every node; with a link-prediction "
      "model, embeddings, scores of given pairs, or top-k candidates");
  app.add_option("dataset", o->dataset, "Dataset directory")->required();
  app.add_option("--checkpoint", o->checkpoint, "Checkpoint written by skiff train")
      ->required()
      ->check(NonEmpty());
  app.add_option("--out", o->out, "Output directory")->required()->check(NonEmpty());
  app.add_option("--threads", o->threads, "Threads (0 = all)")->check(ThreadCount());
  app.add_option("--memory", o->memory,
                 "Predict out of core within this memory budget (e.g. 4GiB; see docs/pipeline.md)")
      ->check(NonEmpty());
  app.add_option("--device", o->device, "Compute stage: cpu or cuda")
      ->capture_default_str()
      ->check(StatusCheck(
          [](const std::string& text) { return ParseName(kDeviceNames, "device", text).status(); },
          "NAME"));
  app.add_option("--inference", o->inference,
                 "How every node is predicted: layers (each layer once over all nodes, the graph "
                 "in memory, CPU), batches (sampled neighbourhoods of seed batches, as "
                 "evaluation), or auto (layers unless --memory or --device cuda)")
      ->capture_default_str()
      ->check(StatusCheck(
          [](const std::string& text) {
            return ParseName(kInferenceNames, "inference mode", text).status();
          },
          "NAME"));
  app.add_option("--task", o->task,
                 "The checkpoint's task, checked: node (classes and embeddings) or link "
                 "(embeddings, --pairs scores or --top-k candidates); default: the checkpoint's")
      ->check(StatusCheck(
          [](const std::string& text) {
            return ParseName(train::kTaskNames, "task", text).status();
          },
          "NAME"));
  app.add_option("--pairs", o->link.pairs_path,
                 "--task link: score the pairs of this file (two raw node IDs per line) into "
                 "scores.npy")
      ->check(NonEmpty());
  app.add_option("--top-k", o->link.top_k,
                 "--task link: the K best new destinations of each node of --nodes "
                 "(top_k_ids, top_k_scores.npy)")
      ->check(CLI::PositiveNumber);
  app.add_option("--nodes", o->link.nodes_path,
                 "--task link, with --top-k: the query nodes (one raw node ID per line)")
      ->check(NonEmpty());
  app.add_flag("--keep-known", o->link.keep_known,
               "--task link, with --top-k: keep candidates the node already links to in the graph");
  app.add_flag("--distributed", o->distributed,
               "Share the prediction among the ranks of an mpirun job, each reading the dataset "
               "and checkpoint: mpirun -np W skiff predict DS --distributed ... "
               "(docs/distributed.md)");
  app.add_option("--ownership", o->ownership,
                 "replicated (each rank reads the whole dataset) or partitions (each rank loads "
                 "its range of the dataset's partitions, or its shard, and predicts the nodes it "
                 "owns; docs/distributed.md)")
      ->capture_default_str()
      ->check(StatusCheck(
          [](const std::string& text) {
            return ParseName(train::kOwnershipNames, "--ownership", text).status();
          },
          "NAME"));
  app.add_option("--dist-timeout", o->dist_timeout,
                 "--distributed: seconds a rank waits for the others in one exchange before the "
                 "job ends with an error naming the silent ranks")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddTrainFlags(app, &o->flags, DeviceOptionNames());
  CLI::App* app_ptr = &app;
  return [o, app_ptr] {
    o->given = GivenIn(*app_ptr);
    return RunPredict(*o);
  };
}

}  // namespace
SKIFF_REGISTER_COMMAND(predict, 55, Setup);
}  // namespace skiff::cli
