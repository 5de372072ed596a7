// `skiff info DATASET [--verify] [--json]`: print a dataset's manifest summary; verify checksums.
#include <cstdio>
#include <filesystem>

#include "skiff/convert/id_map.h"

#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/progress.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/edge_split_cli.h"

namespace skiff::cli {
namespace {

struct InfoOptions {
  std::string dataset;
  bool verify = false;
  bool json = false;
};

// The ID map line: how many raw IDs idmap/ holds and its size on disk (or why it cannot be read).
void PrintIdMap(const std::string& dataset, const format::Manifest& m) {
  if (!m.has_id_map) {
    std::printf("id map       no (IDs were dense)\n");
    return;
  }
  const std::string dir = dataset + "/" + format::kIdMapDir;
  auto map = convert::IdMap::OpenReadOnly(dir);
  if (!map.ok()) {
    std::printf("id map       yes (idmap/), unreadable: %s\n", map.status().ToString().c_str());
    return;
  }
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  }
  const int64_t ids = (*map)->size();
  std::printf("id map       yes (idmap/): %lld raw IDs, %s%s\n", static_cast<long long>(ids),
              FormatBytes(bytes).c_str(),
              ids == m.num_nodes ? "" : " -- does not match the node count");
}

// idmap/ opens and holds one raw ID per node.
Status VerifyIdMap(const std::string& dataset, const format::Manifest& m) {
  if (!m.has_id_map) return Status::Ok();
  const std::string dir = dataset + "/" + format::kIdMapDir;
  SKIFF_ASSIGN_OR_RETURN(auto map, convert::IdMap::OpenReadOnly(dir));
  if (map->size() != m.num_nodes) {
    return Status::Corruption(dir + " holds " + std::to_string(map->size()) +
                              " raw IDs; the manifest has " + std::to_string(m.num_nodes) +
                              " nodes");
  }
  return Status::Ok();
}

int RunInfo(const InfoOptions& opt) {
  auto ds = format::Dataset::Open(opt.dataset);
  if (!ds.ok()) return ReportStatus("info", ds.status());
  const auto& m = (*ds)->manifest();
  if (opt.json) {
    std::fputs(m.ToJson().c_str(), stdout);
  } else {
    std::printf("dataset      %s\n", opt.dataset.c_str());
    std::printf("name         %s\n", m.name.c_str());
    std::printf("source       %s\n", m.source.c_str());
    std::printf("format       version %d%s\n", m.version,
                m.version < 2 ? " (older: the manifest has no checksum of its own)" : "");
    std::printf("nodes        %lld\n", static_cast<long long>(m.num_nodes));
    std::printf("edges        %lld stored%s\n", static_cast<long long>(m.num_edges),
                m.undirected ? " (undirected: both directions)" : " (directed)");
    std::printf("features     %lld x %s\n", static_cast<long long>(m.feature_dim),
                format::DTypeName(m.feature_dtype));
    std::printf("classes      %lld\n", static_cast<long long>(m.num_classes));
    std::printf("splits       train %lld / valid %lld / test %lld\n",
                static_cast<long long>(m.train_count), static_cast<long long>(m.valid_count),
                static_cast<long long>(m.test_count));
    if (m.link_split) {
      const auto& l = *m.link_split;
      std::printf(
          "edge split   train %lld / valid %lld / test %lld pairs, non-edges %lld / %lld (%s)%s\n",
          static_cast<long long>(l.train), static_cast<long long>(l.valid),
          static_cast<long long>(l.test), static_cast<long long>(l.valid_neg),
          static_cast<long long>(l.test_neg), EdgeSplitOrigin(l).c_str(),
          l.candidates > 0
              ? (", " + std::to_string(l.candidates) + " ranking candidates per valid/test pair")
                    .c_str()
              : "");
    } else {
      std::printf("edge split   none\n");
    }
    PrintIdMap(opt.dataset, m);
    if (m.partitions) {
      std::printf("partitions   %u (%s), edge cut %.2f%%, imbalance %.2f%%\n",
                  m.partitions->num_partitions, m.partitions->algorithm.c_str(),
                  100 * m.partitions->edge_cut_fraction, 100 * m.partitions->imbalance);
    } else {
      std::printf("partitions   none\n");
    }
    if (m.shard) {
      const format::ShardInfo& sh = *m.shard;
      std::printf(
          "shard        rank %d of %d: nodes [%lld, %lld), partitions [%u, %u) (the "
          "whole dataset's manifest %s)\n",
          sh.rank, sh.ranks(), static_cast<long long>(sh.begin_node()),
          static_cast<long long>(sh.end_node()), sh.first_partition, sh.end_partition,
          sh.dataset_xxh3.c_str());
    }
    uint64_t total = 0;
    for (const auto& [name, f] : m.files) total += f.data_bytes;
    std::printf("size         %s in %zu files\n", FormatBytes(total).c_str(), m.files.size());
  }
  if (opt.verify) {
    std::fflush(stdout);  // the summary above, before progress lines on stderr
    Progress progress("verify", m.files.size(), "files");
    for (const auto& [name, f] : m.files) {
      auto reader = (*ds)->File(name);
      if (!reader.ok()) return ReportStatus("info", reader.status());
      Status st = (*reader)->VerifyAll();
      if (!st.ok()) return ReportStatus("info", st);
      progress.Add(1);
    }
    progress.Finish();
    std::fflush(stderr);
    if (Status st = (*ds)->VerifyConsistency(); !st.ok()) return ReportStatus("info", st);
    if (Status st = VerifyIdMap(opt.dataset, m); !st.ok()) return ReportStatus("info", st);
    std::printf(
        "verify       OK (every block of every file matches its checksum; labels, splits, "
        "graph, relabelling, edge split and ID map agree with the manifest)\n");
  }
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  app.description(
      "Print a dataset's summary; --verify checks every block's checksum and the data's "
      "consistency with the manifest");
  app.add_option("dataset", opt->dataset, "Dataset directory")->required();
  app.add_flag("--verify", opt->verify,
               "Read every file, verify every block's checksum and the data's consistency");
  app.add_flag("--json", opt->json, "Print the manifest as JSON");
  return [opt] { return RunInfo(*opt); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(info, 30, Setup);
}  // namespace skiff::cli
