// `skiff partition DATASET -k K [--algo grem|fennel|ldg|random] ...`: partition a dataset's graph
// and rewrite it in partition order (in place, or into --output). See docs/partition.md.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>

#include "skiff/log.h"
#include "skiff/partition/metis_export.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/output_paths.h"

namespace skiff::cli {
namespace {

struct PartitionCliOptions {
  std::string dataset;
  std::string output;
  int k = 16;
  std::string algo = "grem";
  std::string order = "natural";
  int passes = 0;
  double eps = 0.03;
  uint64_t seed = 1;
  bool no_refine = false;
  bool balance_train = false;
  bool overwrite = false;
  bool no_write = false;
  bool json = false;
  int threads = 2;
  std::string memory = "1GiB";
  std::string export_metis;
  std::string evaluate;
  bool k_given = false;  // -k was on the command line
};

// An external partition file: one part number per line (as gpmetis writes them); blank lines are
// skipped. Corruption naming the line for anything else.
Result<std::vector<int32_t>> ReadPartFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::FromErrno(errno, "open " + path);
  std::vector<int32_t> part;
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const size_t last = line.find_last_not_of(" \t\r");
    const char* begin = line.data() + first;
    const char* end = line.data() + last + 1;
    int64_t value = -1;
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr != end || value < 0 ||
        value > std::numeric_limits<int32_t>::max()) {
      return Status::Corruption(path + ": line " + std::to_string(line_no) +
                                ": expected a partition number in [0, 2^31), got '" +
                                std::string(begin, end) + "'");
    }
    part.push_back(static_cast<int32_t>(value));
  }
  if (in.bad()) return Status::IOError("reading " + path);
  return part;
}

// --evaluate: the cut and balance of an external partitioning, printed as JSON. Without -k, k is
// the largest part number plus one.
Status EvaluateExternal(const PartitionCliOptions& o) {
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int32_t> part, ReadPartFile(o.evaluate));
  int k = o.k;
  if (!o.k_given) k = part.empty() ? 1 : *std::max_element(part.begin(), part.end()) + 1;
  SKIFF_ASSIGN_OR_RETURN(const partition::PartitionReport r,
                         partition::EvaluatePartition(o.dataset, part, k));
  std::printf(
      "{\"algorithm\": \"external\", \"k\": %d, \"nodes\": %lld, \"edges\": %lld, "
      "\"cut_edges\": %lld, \"edge_cut_fraction\": %.6f, \"imbalance\": %.6f}\n",
      r.k, static_cast<long long>(r.num_nodes), static_cast<long long>(r.num_edges),
      static_cast<long long>(r.cut_edges), r.edge_cut_fraction, r.imbalance);
  return Status::Ok();
}

void PrintReport(const PartitionCliOptions& o, const partition::PartitionReport& r) {
  if (o.json) {
    std::printf(
        "{\"algorithm\": \"%s\", \"k\": %d, \"nodes\": %lld, \"edges\": %lld, \"cut_edges\": %lld, "
        "\"edge_cut_fraction\": %.6f, \"imbalance\": %.6f, \"train_imbalance\": %.6f, "
        "\"moves\": %lld, \"partition_seconds\": %.3f, \"seconds\": %.3f, "
        "\"peak_memory_bytes\": %llu}\n",
        r.algorithm.c_str(), r.k, static_cast<long long>(r.num_nodes),
        static_cast<long long>(r.num_edges), static_cast<long long>(r.cut_edges),
        r.edge_cut_fraction, r.imbalance, r.train_imbalance, static_cast<long long>(r.moves),
        r.partition_seconds, r.seconds, static_cast<unsigned long long>(r.peak_memory_bytes));
    return;
  }
  std::printf("partitioned  %s into %d parts with %s\n", o.dataset.c_str(), r.k,
              r.algorithm.c_str());
  std::printf("edge cut     %.2f%% (%lld of %lld stored edges)\n", 100 * r.edge_cut_fraction,
              static_cast<long long>(r.cut_edges), static_cast<long long>(r.num_edges));
  std::printf("imbalance    %.2f%% (largest part vs ceil(N/k))", 100 * r.imbalance);
  if (o.balance_train) std::printf(", training nodes %.2f%%", 100 * r.train_imbalance);
  std::printf("\n");
  std::printf("time         %s (partitioner %s)\n", FormatSeconds(r.seconds).c_str(),
              FormatSeconds(r.partition_seconds).c_str());
  std::printf("peak memory  %s\n", FormatBytes(r.peak_memory_bytes).c_str());
  if (!o.no_write) std::printf("written      %s\n", r.output_dir.c_str());
}

// Refuses outputs that would destroy or alter the dataset: an --output that is it, holds it or
// lies inside it, and an --export-metis file inside it. (In place is no --output at all.)
Status CheckOutputs(const PartitionCliOptions& o) {
  if (!o.output.empty()) {
    SKIFF_RETURN_IF_ERROR(CheckOutputSparesInput(o.output, {o.dataset}));
    SKIFF_RETURN_IF_ERROR(CheckNotInside("--output", o.output, o.dataset));
  }
  return CheckNotInside("--export-metis", o.export_metis, o.dataset);
}

int RunPartition(const PartitionCliOptions& o) {
  if (const Status st = CheckOutputs(o); !st.ok()) return ReportStatus("partition", st);
  if (!o.export_metis.empty()) {
    Status st = partition::ExportMetisGraph(o.dataset, o.export_metis);
    if (st.ok()) std::printf("wrote METIS graph %s\n", o.export_metis.c_str());
    return ReportStatus("partition", st);
  }
  if (!o.evaluate.empty()) return ReportStatus("partition", EvaluateExternal(o));
  partition::PartitionOptions opt;
  opt.dataset_dir = o.dataset;
  opt.output_dir = o.output;
  opt.overwrite = o.overwrite;
  opt.write_layout = !o.no_write;
  opt.show_progress = !o.json;
  if (!ParseBytes(o.memory, &opt.memory_bytes)) {
    std::fprintf(stderr, "skiff partition: --memory '%s' is not a size (e.g. 4GiB, 512MiB)\n",
                 o.memory.c_str());
    return 2;
  }
  auto algo = partition::ParseAlgorithm(o.algo);
  if (!algo.ok()) return ReportStatus("partition", algo.status());
  auto order = partition::ParseStreamOrder(o.order);
  if (!order.ok()) return ReportStatus("partition", order.status());
  auto& p = opt.partitioner;
  p.k = o.k;
  p.algorithm = *algo;
  p.order = *order;
  p.passes = o.passes;
  p.eps = o.eps;
  p.seed = o.seed;
  p.refine = !o.no_refine;
  p.balance_train = o.balance_train;
  p.threads = o.threads;
  auto report = partition::PartitionDataset(opt);
  if (!report.ok()) return ReportStatus("partition", report.status());
  PrintReport(o, *report);
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<PartitionCliOptions>();
  app.description(
      "Partition a dataset's graph (GREM by default) and rewrite it so each partition is a "
      "contiguous ID range with one feature extent and grouped edges");
  app.add_option("dataset", o->dataset, "Dataset directory")->required();
  app.add_option("-k,--partitions", o->k, "Number of partitions")
      ->check(StatusCheck(
          [](const std::string& text) {
            return text == "0" || (!text.empty() && text.front() == '-')
                       ? Status::InvalidArgument("must be at least 1, got " + text)
                       : Status::Ok();
          },
          "K"))
      ->capture_default_str();
  app.add_option("--algo", o->algo, "grem, fennel, ldg or random")->capture_default_str();
  app.add_option("--order", o->order, "Stream order: natural, random or bfs")
      ->capture_default_str();
  app.add_option("--passes", o->passes, "Streaming passes (0: up to 8 for grem, else 1)")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--eps", o->eps, "Allowed imbalance: parts hold <= (1+eps)*ceil(N/k) nodes")
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Seed (same seed, same partition)")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_flag("--no-refine", o->no_refine,
               "GREM: freeze placements (later passes restream) instead of refining");
  app.add_flag("--balance-train", o->balance_train, "Also balance training nodes across parts");
  app.add_option("--threads", o->threads, "Scoring threads")
      ->capture_default_str()
      ->check(ThreadCount());
  app.add_option("--memory", o->memory, "Memory budget (e.g. 4GiB)")
      ->capture_default_str()
      ->check(NonEmpty());
  CLI::Option* output = app.add_option("-o,--output", o->output,
                                       "Write the partitioned dataset here (default: in place)")
                            ->check(NonEmpty());
  CLI::Option* overwrite =
      app.add_flag("--overwrite", o->overwrite, "Replace an existing --output directory");
  app.add_flag("--no-write", o->no_write, "Partition and report only; write nothing")
      ->excludes(output)
      ->excludes(overwrite);
  app.add_flag("--json", o->json, "Print the summary as one JSON line");
  CLI::Option* metis =
      app.add_option("--export-metis", o->export_metis,
                     "Write the graph as a METIS .graph file to this path and exit (for "
                     "comparisons)")
          ->check(NonEmpty());
  app.add_option("--evaluate", o->evaluate,
                 "Score an external partition file (one part per line, e.g. gpmetis output) "
                 "against the dataset's stored edges; prints JSON and exits (k: -k, else the "
                 "largest part number + 1)")
      ->check(NonEmpty())
      ->excludes(metis);
  return [o, &app] {
    o->k_given = app.get_option("--partitions")->count() > 0;
    return RunPartition(*o);
  };
}

}  // namespace
SKIFF_REGISTER_COMMAND(partition, 20, Setup);
}  // namespace skiff::cli
