// `skiff shard DATASET --ranks W -o DIR [--rank R ...] [--overwrite]`: writes DIR/rank-<r>, rank
// r's shard of a partitioned dataset for an owned-partition job of W ranks (format/shard.h;
// docs/distributed.md, "Each rank's own range on its own disk"), so that each machine stores only
// the range its rank owns. `skiff train DIR --distributed --ownership partitions` then opens, on
// rank r, DIR/rank-<r>.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/format/shard.h"
#include "skiff/log.h"
#include "skiff/train/node_ranges.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/distributed.h"

namespace skiff::cli {
namespace {

struct ShardOptions {
  std::string dataset;
  std::string out;
  int ranks = 0;
  std::vector<int> only;  // --rank: these ranks' shards alone (empty: every rank's)
  bool overwrite = false;
};

// The bytes of a written shard's files, as its manifest records them.
uint64_t ShardBytes(const std::string& dir) {
  auto ds = format::Dataset::Open(dir);
  if (!ds.ok()) return 0;
  uint64_t total = 0;
  for (const auto& [name, info] : (*ds)->manifest().files) total += info.data_bytes;
  return total;
}

Status WriteShards(const ShardOptions& o) {
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<format::Dataset> ds, format::Dataset::Open(o.dataset));
  if (ds->is_shard()) return ds->RequireWhole("writing shards");
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> train, ds->LoadSplit(format::kTrainFile));
  SKIFF_ASSIGN_OR_RETURN(const train::NodeRanges ranges,
                         train::NodeRanges::ForDataset(*ds, train, o.ranks));
  for (int r : o.only) {
    if (r >= o.ranks) {
      return Status::InvalidArgument("--rank " + std::to_string(r) + " is not one of the " +
                                     std::to_string(o.ranks) + " ranks of --ranks");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) return Status::IOError("create " + o.out + ": " + ec.message());
  uint64_t whole = 0;
  for (const auto& [name, info] : ds->manifest().files) whole += info.data_bytes;
  for (int r = 0; r < o.ranks; ++r) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), r) == o.only.end()) continue;
    const std::string dir = RankShardDir(o.out, r);
    SKIFF_RETURN_IF_ERROR(format::WriteShard(*ds, ranges.first(), r, dir, o.overwrite, true));
    LogInfo("rank " + std::to_string(r) + ": nodes [" + std::to_string(ranges.begin(r)) + ", " +
            std::to_string(ranges.end(r)) + ") in " + dir + " (" + FormatBytes(ShardBytes(dir)) +
            " of the dataset's " + FormatBytes(whole) + ")");
  }
  return Status::Ok();
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<ShardOptions>();
  app.description(
      "Write each rank's shard of a partitioned dataset for `skiff train --distributed "
      "--ownership partitions` on W ranks: DIR/rank-<r> holds the adjacency lists and feature "
      "rows of the nodes rank r owns, and the labels, splits and ID map whole, so that each "
      "machine stores only its own range (docs/distributed.md)");
  app.add_option("dataset", o->dataset, "Partitioned dataset directory (skiff partition)")
      ->required();
  app.add_option("--ranks", o->ranks, "Ranks of the job (mpirun -np W)")
      ->required()
      ->check(CLI::Range(1, 65536));
  app.add_option("-o,--out", o->out,
                 "Directory for the shards (rank-0, rank-1, ...); train with this directory as "
                 "the dataset")
      ->required();
  app.add_option("--rank", o->only,
                 "Write only these ranks' shards (e.g. each machine its own, from a shared copy)")
      ->check(CLI::Range(0, 65535));
  app.add_flag("--overwrite", o->overwrite, "Replace shards that exist");
  return [o] { return ReportStatus("shard", WriteShards(*o)); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(shard, 25, Setup);
}  // namespace skiff::cli
