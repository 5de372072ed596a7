#include "tools/skiff/distributed.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "skiff/log.h"
#include "skiff/pipeline/memory_budget.h"
#include "skiff/process.h"
#include "skiff/units.h"

namespace skiff::cli {
namespace {

using nlohmann::json;

// The run as the ranks compare it: {"dataset": the manifest's checksum (a shard's: the whole
// dataset's, so that the ranks' shards of one dataset agree), "options": {...}}.
std::string Fingerprint(const format::Dataset& dataset, const train::TrainOptions& t) {
  const format::Manifest& m = dataset.manifest();
  json f;
  f["dataset"] = m.shard ? m.shard->dataset_xxh3 : m.Checksum();
  f["options"] = json::parse(t.ToJson());
  return f.dump();
}

// A value as a user typed it: floats (saved from float options) in their shortest form.
std::string Show(const json& value) {
  if (!value.is_number_float()) return value.is_null() ? "unset" : value.dump();
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof(text), value.get<float>());
  return ec == std::errc() ? std::string(text, end) : value.dump();
}

// "--batch-size" for the options' JSON key "batch_size".
std::string OptionName(std::string key) {
  for (char& c : key) c = c == '_' ? '-' : c;
  return "--" + key;
}

// The first field in which `other` (rank `rank`'s) differs from `first` (rank 0's), as
// "--lr is 0.02 on rank 1 but 0.01 on rank 0", or "".
std::string Difference(const json& first, const json& other, int rank) {
  const std::string where = " on rank " + std::to_string(rank) + " but ";
  if (first["dataset"] != other["dataset"]) {
    return "the dataset differs: manifest checksum " + other["dataset"].dump() + where +
           first["dataset"].dump() + " on rank 0 (each rank must open the same dataset)";
  }
  const json& a = first["options"];
  const json& b = other["options"];
  for (const auto& [key, value] : a.items()) {
    const json theirs = b.contains(key) ? b[key] : json();
    if (theirs != value) {
      return OptionName(key) + " is " + Show(theirs) + where + Show(value) + " on rank 0";
    }
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) return OptionName(key) + " is " + Show(value) + where + "unset on rank 0";
  }
  return "";
}

}  // namespace

namespace {

// --gpus' refusals.
Status CheckGpuOptions(const train::TrainOptions& t, int ranks, Device device) {
  if (device != Device::kCuda) return Status::InvalidArgument("--gpus needs --device cuda");
  if (ranks > 1) {
    return Status::InvalidArgument(
        "--gpus trains in one process: with --distributed each rank "
        "uses one GPU (several per rank are not built yet)");
  }
  if (t.ownership == train::Ownership::kPartitions) {
    return Status::InvalidArgument("--gpus is not built yet with --ownership partitions");
  }
  if (t.task != train::Task::kNode) {
    return Status::InvalidArgument(
        "--gpus trains node classification: --task link is not "
        "built yet with it");
  }
  return Status::Ok();
}

}  // namespace

Status CheckStepOptions(const train::TrainOptions& t, int ranks, Device device,
                        const std::vector<int>& gpus) {
  if (!gpus.empty()) {
    SKIFF_RETURN_IF_ERROR(CheckGpuOptions(t, ranks, device));
  }
  const bool owned = t.ownership == train::Ownership::kPartitions;
  if (ranks == 1 && t.accumulate == 1 && !owned) return Status::Ok();
  const std::string what = owned       ? "--ownership partitions"
                           : ranks > 1 ? "--distributed (" + std::to_string(ranks) + " ranks)"
                                       : "--accumulate";
  // One process's node steps over several batches sum on its GPU (model/replica_group.h);
  // replicated CUDA ranks, and link steps (whose encoder gives its gradients to the host for the
  // decoder's), sum host copies as the CPU does. Owned partitions compute on the host.
  if (device != Device::kCpu && owned) {
    return Status::InvalidArgument(what +
                                   " runs on --device cpu: each rank's batches come from "
                                   "its exchanges, on the host");
  }
  if (owned && t.task != train::Task::kNode) {
    return Status::InvalidArgument(what +
                                   " trains node classification: --task link is not built "
                                   "yet with it");
  }
  return Status::Ok();
}

Status LogRankPeaks(dist::Communicator& comm, uint64_t memory_bytes) {
  if (comm.size() == 1) return Status::Ok();
  std::vector<int64_t> peaks(static_cast<size_t>(comm.size()), 0);
  peaks[static_cast<size_t>(comm.rank())] = static_cast<int64_t>(PeakRssBytes());
  SKIFF_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(peaks), "peak RSS"));
  if (comm.rank() != 0) return Status::Ok();
  std::string line = "peak RSS per rank:";
  for (size_t r = 0; r < peaks.size(); ++r) {
    line += std::string(r > 0 ? "," : "") + " rank " + std::to_string(r) + " " +
            FormatBytes(static_cast<uint64_t>(peaks[r]));
  }
  if (memory_bytes > 0) {
    line += " (each: budget " + FormatBytes(memory_bytes) + " + fixed overhead " +
            FormatBytes(pipeline::kFixedOverheadBytes) + ")";
  }
  LogInfo(line);
  return Status::Ok();
}

Result<int> LocalRank(dist::Communicator& comm) {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return Status::Internal("gethostname failed: the ranks of a machine cannot share its GPUs");
  }
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> names, comm.AllGather(name, "host names"));
  int local = 0;
  for (int r = 0; r < comm.rank(); ++r) local += names[static_cast<size_t>(r)] == name ? 1 : 0;
  return local;
}

Status CheckResumeWorldSize(int saved_world_size, int ranks, const std::string& checkpoint) {
  if (saved_world_size == ranks) return Status::Ok();
  return Status::InvalidArgument("--resume " + checkpoint + " was written by a job of " +
                                 std::to_string(saved_world_size) + " rank(s), this job has " +
                                 std::to_string(ranks) +
                                 ": resume with the same number of ranks (mpirun -np " +
                                 std::to_string(saved_world_size) + ")");
}

std::string RankShardDir(const std::string& dir, int rank) {
  return dir + "/rank-" + std::to_string(rank);
}

Result<std::unique_ptr<format::Dataset>> OpenRankDataset(const std::string& dir, int rank) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir + "/" + format::kManifestFile, ec)) return format::Dataset::Open(dir);
  const std::string shard = RankShardDir(dir, rank);
  if (fs::exists(shard, ec) || !fs::exists(RankShardDir(dir, 0), ec)) {
    return format::Dataset::Open(fs::exists(shard, ec) ? shard : dir);
  }
  return Status::InvalidArgument(dir + " holds shards (skiff shard), but not rank " +
                                 std::to_string(rank) + "'s (" + shard +
                                 "): write it there (skiff shard --rank " + std::to_string(rank) +
                                 "), or start as many ranks as the shards were written for");
}

Status CheckRankShard(const format::Dataset& dataset, int rank, int ranks) {
  if (!dataset.is_shard()) return Status::Ok();
  const format::ShardInfo& s = *dataset.manifest().shard;
  if (s.rank == rank && s.ranks() == ranks) return Status::Ok();
  return Status::InvalidArgument(
      dataset.dir() + " is rank " + std::to_string(s.rank) + "'s shard of a " +
      std::to_string(s.ranks()) + "-rank job, opened by rank " + std::to_string(rank) + " of " +
      std::to_string(ranks) +
      ": give every rank the directory skiff shard wrote (each rank opens " +
      "its rank-<r> there), and start as many ranks as it was written for (mpirun -np " +
      std::to_string(s.ranks()) + ")");
}

Status CheckSameRun(dist::Communicator& comm, const format::Dataset& dataset,
                    const train::TrainOptions& t) {
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                         comm.AllGather(Fingerprint(dataset, t), "dataset and options"));
  const json first = json::parse(all[0]);
  std::string difference;
  std::vector<int> ranks;
  for (size_t r = 1; r < all.size(); ++r) {
    const std::string d = Difference(first, json::parse(all[r]), static_cast<int>(r));
    if (d.empty()) continue;
    if (difference.empty()) difference = d;
    ranks.push_back(static_cast<int>(r));
  }
  if (ranks.empty()) return Status::Ok();
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return Status::InvalidArgument("the ranks were started with different runs (rank" +
                                 std::string(ranks.size() > 1 ? "s " : " ") + list +
                                 (ranks.size() > 1 ? " differ" : " differs") +
                                 " from rank 0): " + difference);
}

}  // namespace skiff::cli
