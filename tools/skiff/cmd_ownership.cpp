// `skiff ownership DATASET [--ranks 2,4,8] [--ownership partitions,random] [--seeds owned]`: how
// much of one training epoch's sampling and feature gathering would cross ranks if each of W ranks
// owned part of the graph -- the dataset's partitions in contiguous ranges, or nodes at random
// (train::MeasureOwnershipTraffic; docs/distributed.md, "Owned partitions: what crosses ranks").
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_pass.h"
#include "skiff/train/ownership_traffic.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/digest_file.h"

namespace skiff::cli {
namespace {

struct OwnershipOptions {
  std::string dataset;
  std::string ranks = "2,4,8";
  std::string ownership = "partitions,random";
  std::string seeds = "owned";
  std::string fanouts = "15,10";
  int64_t batch_size = 1024;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t owner_seed = 1;
  int64_t row_bytes = -1;  // -1: the dataset's feature row
  int threads = 0;
  bool json = false;
  std::string digest;           // write the owned parts' BatchDigestLines here instead
  bool record_degrees = false;  // --digest: sample as GCN does (degrees recorded)
};

Result<std::vector<int>> ParseRanks(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int value = 0;
    try {
      size_t used = 0;
      value = std::stoi(item, &used);
      if (used != item.size()) value = 0;
    } catch (const std::exception&) {
      value = 0;
    }
    if (value < 1 || value > 65536) {
      return Status::InvalidArgument("--ranks: '" + item + "' is not a rank count in [1, 65536]");
    }
    out.push_back(value);
  }
  if (out.empty()) return Status::InvalidArgument("--ranks: give at least one rank count");
  return out;
}

Result<std::vector<std::string>> ParseOwnership(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item != "partitions" && item != "random") {
      return Status::InvalidArgument("--ownership: '" + item + "' is not 'partitions' or 'random'");
    }
    out.push_back(item);
  }
  if (out.empty()) return Status::InvalidArgument("--ownership: give 'partitions' or 'random'");
  return out;
}

double Percent(int64_t part, int64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// --digest: every rank's part of every batch of the epoch, sampled and gathered in this one process
// over the whole dataset, as BatchDigestLines (rank by rank within each batch) into `path`: what a
// job trained with --ownership partitions and --batch-digest must have computed.
Status WriteDigests(const OwnershipOptions& o, const format::Dataset& ds,
                    const sampler::GraphSource& graph, const std::vector<int64_t>& train, int ranks,
                    const std::vector<int>& fanouts) {
  SKIFF_ASSIGN_OR_RETURN(const train::NodeRanges node_ranges,
                         train::NodeRanges::ForDataset(ds, train, ranks));
  SKIFF_ASSIGN_OR_RETURN(auto features, sampler::InMemoryFeatures::Load(ds));
  const sampler::NeighborSampler sampler(graph, fanouts, o.record_degrees);
  const auto plan = train::PlanBatches(train, o.batch_size, true, o.seed, o.epoch);
  DigestFile out("--digest");
  SKIFF_RETURN_IF_ERROR(out.Open(o.digest));
  sampler::MiniBatch mb;
  std::vector<float> rows;
  for (size_t b = 0; b < plan.size(); ++b) {
    for (int rank = 0; rank < ranks; ++rank) {
      const std::vector<int64_t> part = train::OwnedPart(plan[b], node_ranges, rank);
      SKIFF_RETURN_IF_ERROR(
          sampler.Sample(part, sampler::BatchSeed(o.seed, train::kTrainStream, o.epoch, b), &mb));
      rows.resize(mb.input_nodes.size() * static_cast<size_t>(features->dim()));
      SKIFF_RETURN_IF_ERROR(features->Gather(mb.input_nodes, rows.data()));
      SKIFF_RETURN_IF_ERROR(
          out.Write(train::BatchDigestLine(o.epoch, train::kTrainStream, b, rank, mb, rows)));
    }
  }
  return out.Close();
}

int RunOwnership(const OwnershipOptions& o) {
  auto ranks = ParseRanks(o.ranks);
  auto models = ParseOwnership(o.ownership);
  auto fanouts = sampler::ParseFanouts(o.fanouts);
  for (const Status* st : {&ranks.status(), &models.status(), &fanouts.status()}) {
    if (!st->ok()) {
      std::fprintf(stderr, "skiff ownership: %s\n", st->message().c_str());
      return 2;
    }
  }
  if (o.seeds != "owned" && o.seeds != "round-robin") {
    std::fprintf(stderr, "skiff ownership: --seeds: '%s' is not 'owned' or 'round-robin'\n",
                 o.seeds.c_str());
    return 2;
  }
  auto ds = format::Dataset::Open(o.dataset);
  if (!ds.ok()) return ReportStatus("ownership", ds.status());
  const format::Manifest& m = (*ds)->manifest();
  const bool wants_partitions =
      std::find(models->begin(), models->end(), "partitions") != models->end();
  if (wants_partitions && !m.partitions) {
    return ReportStatus(
        "ownership",
        Status::InvalidArgument("dataset " + o.dataset +
                                " is not partitioned: partition it first (skiff partition DATASET "
                                "-k K --algo grem), or measure --ownership random alone"));
  }
  auto train = (*ds)->LoadSplit(format::kTrainFile);
  if (!train.ok()) return ReportStatus("ownership", train.status());
  if (train->empty()) {
    return ReportStatus("ownership",
                        Status::InvalidArgument("dataset " + o.dataset +
                                                " has no training nodes: nothing to sample"));
  }
  auto graph = sampler::InMemoryGraph::Load(**ds);
  if (!graph.ok()) return ReportStatus("ownership", graph.status());
  const uint64_t row_bytes =
      o.row_bytes >= 0 ? static_cast<uint64_t>(o.row_bytes) : m.feature_row_bytes();
  if (!o.digest.empty()) {
    if (ranks->size() != 1 || models->size() != 1 || models->front() != "partitions" ||
        o.seeds != "owned") {
      return ReportStatus("ownership",
                          Status::InvalidArgument("--digest takes one rank count (--ranks W) and "
                                                  "--ownership partitions --seeds owned"));
    }
    return ReportStatus("ownership",
                        WriteDigests(o, **ds, **graph, *train, ranks->front(), *fanouts));
  }

  train::TrafficOptions topt;
  topt.fanouts = *fanouts;
  topt.batch_size = o.batch_size;
  topt.seed = o.seed;
  topt.epoch = o.epoch;
  topt.rule = o.seeds == "owned" ? train::SeedRule::kOwned : train::SeedRule::kRoundRobin;
  topt.threads = o.threads > 0
                     ? o.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const std::string partition_name =
      m.partitions ? m.partitions->algorithm + " k=" + std::to_string(m.partitions->num_partitions)
                   : "";
  nlohmann::json results = nlohmann::json::array();
  if (!o.json) {
    std::printf(
        "dataset %s: %lld nodes, %lld training seeds, fanouts %s, batch %lld, seed %llu, epoch "
        "%llu, seeds %s, feature row %llu B\n",
        o.dataset.c_str(), static_cast<long long>(m.num_nodes),
        static_cast<long long>(train->size()), sampler::FanoutsToString(*fanouts).c_str(),
        static_cast<long long>(o.batch_size), static_cast<unsigned long long>(o.seed),
        static_cast<unsigned long long>(o.epoch), train::SeedRuleName(topt.rule),
        static_cast<unsigned long long>(row_bytes));
    std::printf("%3s  %-16s %9s %13s %7s %12s %12s %7s %12s %14s\n", "W", "ownership", "seeds max",
                "neighbours", "remote", "adj. bytes", "input rows", "remote", "feat. bytes",
                "busiest rank");
  }
  for (int w : *ranks) {
    for (const std::string& model : *models) {
      std::vector<int> first_partition;
      std::vector<int32_t> owners;
      if (model == "partitions") {
        auto made = train::PartitionOwners(m.partitions->boundaries, *train, w, &first_partition);
        if (!made.ok()) return ReportStatus("ownership", made.status());
        owners = std::move(*made);
      } else {
        owners = train::RandomOwners(m.num_nodes, w, o.owner_seed);
      }
      auto per_rank = train::MeasureOwnershipTraffic(**graph, *train, owners, w, topt);
      if (!per_rank.ok()) return ReportStatus("ownership", per_rank.status());
      train::RankTraffic total;
      uint64_t busiest_bytes = 0;
      int64_t seeds_max = 0;
      nlohmann::json ranks_json = nlohmann::json::array();
      for (const train::RankTraffic& t : *per_rank) {
        total.Add(t);
        const uint64_t bytes = t.remote_adjacency_bytes() + t.remote_feature_bytes(row_bytes);
        busiest_bytes = std::max(busiest_bytes, bytes);
        seeds_max = std::max(seeds_max, t.seeds);
        ranks_json.push_back({{"seeds", t.seeds},
                              {"batches", t.batches},
                              {"neighbors", t.neighbors},
                              {"remote_neighbors", t.remote_neighbors},
                              {"rows_expanded", t.rows_expanded},
                              {"remote_rows", t.remote_rows},
                              {"picks", t.picks},
                              {"remote_picks", t.remote_picks},
                              {"input_rows", t.input_rows},
                              {"remote_input_rows", t.remote_input_rows},
                              {"remote_adjacency_bytes", t.remote_adjacency_bytes()},
                              {"remote_feature_bytes", t.remote_feature_bytes(row_bytes)}});
      }
      const std::string label = model == "partitions" ? partition_name : "random";
      nlohmann::json r = {{"ranks", w},
                          {"ownership", model},
                          {"partitioning", model == "partitions" ? partition_name : ""},
                          {"remote_neighbor_fraction",
                           total.neighbors == 0 ? 0.0
                                                : static_cast<double>(total.remote_neighbors) /
                                                      static_cast<double>(total.neighbors)},
                          {"remote_input_row_fraction",
                           total.input_rows == 0 ? 0.0
                                                 : static_cast<double>(total.remote_input_rows) /
                                                       static_cast<double>(total.input_rows)},
                          {"remote_adjacency_bytes", total.remote_adjacency_bytes()},
                          {"remote_feature_bytes", total.remote_feature_bytes(row_bytes)},
                          {"busiest_rank_remote_bytes", busiest_bytes},
                          {"per_rank", ranks_json}};
      if (!first_partition.empty()) r["first_partition"] = first_partition;
      results.push_back(r);
      if (!o.json) {
        const double mean = static_cast<double>(total.seeds) / w;
        std::printf("%3d  %-16s %8.2fx %13lld %6.2f%% %12s %12lld %6.2f%% %12s %14s\n", w,
                    label.c_str(), mean == 0 ? 0.0 : static_cast<double>(seeds_max) / mean,
                    static_cast<long long>(total.neighbors),
                    Percent(total.remote_neighbors, total.neighbors),
                    FormatBytes(total.remote_adjacency_bytes()).c_str(),
                    static_cast<long long>(total.input_rows),
                    Percent(total.remote_input_rows, total.input_rows),
                    FormatBytes(total.remote_feature_bytes(row_bytes)).c_str(),
                    FormatBytes(busiest_bytes).c_str());
        std::fflush(stdout);
      }
    }
  }
  if (o.json) {
    nlohmann::json out = {{"dataset", o.dataset},
                          {"num_nodes", m.num_nodes},
                          {"train_seeds", train->size()},
                          {"fanouts", *fanouts},
                          {"batch_size", o.batch_size},
                          {"seed", o.seed},
                          {"epoch", o.epoch},
                          {"seed_rule", train::SeedRuleName(topt.rule)},
                          {"owner_seed", o.owner_seed},
                          {"feature_row_bytes", row_bytes},
                          {"results", results}};
    std::printf("%s\n", out.dump(2).c_str());
  }
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<OwnershipOptions>();
  app.description(
      "Measure what one training epoch would fetch from other ranks if each of W ranks owned part "
      "of the graph: the fraction of sampled neighbours and of input feature rows owned by "
      "another rank, and their bytes, with the dataset's partitions or random nodes per rank "
      "(docs/distributed.md)");
  app.add_option("dataset", o->dataset,
                 "Dataset directory (partitioned for --ownership "
                 "partitions)")
      ->required();
  app.add_option("--digest", o->digest,
                 "Instead of measuring: write a checksum line per rank's part of every batch of "
                 "the epoch, sampled and gathered in this process (one rank count, partitions); "
                 "a job trained with --ownership partitions --batch-digest must write the same");
  app.add_flag("--record-degrees", o->record_degrees,
               "--digest: sample as GCN does, recording the source nodes' degrees");
  app.add_option("--ranks", o->ranks, "Rank counts W to measure, e.g. 2,4,8")
      ->capture_default_str();
  app.add_option("--ownership", o->ownership,
                 "Ownership models: 'partitions' (contiguous ranges of the dataset's partitions, "
                 "balanced by training nodes) and/or 'random' (each node on a random rank)")
      ->capture_default_str();
  app.add_option("--seeds", o->seeds,
                 "Which rank trains which seeds: 'owned' (each rank its own seeds: the epoch's "
                 "batches restricted to them) or 'round-robin' (whole batches r, r+W, ..., as "
                 "skiff train --distributed)")
      ->capture_default_str();
  app.add_option("--fanouts", o->fanouts, "Training fanouts, input layer first (as skiff train)")
      ->capture_default_str();
  app.add_option("--batch-size", o->batch_size, "Training batch size (as skiff train)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--seed", o->seed, "The training run's --seed")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--epoch", o->epoch, "Which epoch's batches (0 = the first)")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--owner-seed", o->owner_seed, "Seed of random ownership")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--row-bytes", o->row_bytes,
                 "Bytes of a feature row (default: the dataset's feature_dim x dtype size; give "
                 "one for a dataset without features)")
      ->check(NonNegative());
  app.add_option("--threads", o->threads, "Sampling threads (0 = one per core)")
      ->capture_default_str()
      ->check(ThreadCount());
  app.add_flag("--json", o->json, "Print the results (and every rank's counts) as JSON");
  return [o] { return RunOwnership(*o); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(ownership, 60, Setup);
}  // namespace skiff::cli
