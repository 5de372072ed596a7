// `skiff info DATASET [--verify] [--json]`: print a dataset's manifest summary; verify checksums.
#include <cstdio>

#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/progress.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"

namespace skiff::cli {
namespace {

struct InfoOptions {
  std::string dataset;
  bool verify = false;
  bool json = false;
};

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
    std::printf("nodes        %lld\n", static_cast<long long>(m.num_nodes));
    std::printf("edges        %lld stored%s\n", static_cast<long long>(m.num_edges),
                m.undirected ? " (undirected: both directions)" : " (directed)");
    std::printf("features     %lld x %s\n", static_cast<long long>(m.feature_dim),
                format::DTypeName(m.feature_dtype));
    std::printf("classes      %lld\n", static_cast<long long>(m.num_classes));
    std::printf("splits       train %lld / valid %lld / test %lld\n",
                static_cast<long long>(m.train_count), static_cast<long long>(m.valid_count),
                static_cast<long long>(m.test_count));
    std::printf("id map       %s\n", m.has_id_map ? "yes (idmap/)" : "no (IDs were dense)");
    if (m.partitions) {
      std::printf("partitions   %u (%s), edge cut %.2f%%, imbalance %.2f%%\n",
                  m.partitions->num_partitions, m.partitions->algorithm.c_str(),
                  100 * m.partitions->edge_cut_fraction, 100 * m.partitions->imbalance);
    } else {
      std::printf("partitions   none\n");
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
    std::printf(
        "verify       OK (every block of every file matches its checksum; labels, splits, "
        "graph and relabelling agree with the manifest)\n");
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
