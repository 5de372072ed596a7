// `skiff convert INPUT OUTPUT [options]`: turn an edge list, METIS graph, OGB raw directory or .npz
// archive into a Skiff dataset. The work is skiff::convert::ConvertGraph (src/convert/); this file
// parses options and prints the summary.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "skiff/convert/convert.h"
#include "skiff/interrupt.h"
#include "skiff/log.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/process.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/edge_split_cli.h"
#include "tools/skiff/output_paths.h"

namespace skiff::cli {
namespace {

struct ConvertFlags {
  std::string input, output;
  std::string format = "auto";
  bool directed = false, undirected = false;
  std::string self_loops = "drop";
  std::string duplicates = "drop";
  std::string memory;
  std::string features, labels;
  std::string split = "0.6,0.2,0.2";
  uint64_t seed = 0;
  std::string feature_dtype = "float32";
  std::string id_map = "auto";
  bool overwrite = false;
  std::string tmp_dir;
  bool header = false, no_header = false;
  std::string extra_columns = "ignore";
  std::string ogb_split;
  bool largest_component = false;
  std::string split_edges;
  uint64_t split_seed = 0;
  int64_t split_candidates = 0;
  CLI::Option* split_seed_opt = nullptr;  // given: seeds the edge split instead of --seed
  int partitions = 0;
  std::string partition_algo = "grem";
};

int Usage(const std::string& message) {
  std::fprintf(stderr, "skiff convert: %s\n", message.c_str());
  return 2;
}

// The conversion's options from the flags; InvalidArgument (a usage error) on a bad flag.
Result<convert::ConvertOptions> ConvertOptionsFrom(const ConvertFlags& f) {
  convert::ConvertOptions opt;
  opt.input = f.input;
  opt.output = f.output;
  SKIFF_ASSIGN_OR_RETURN(opt.format, convert::ParseInputFormat(f.format));
  if (f.directed && f.undirected) {
    return Status::InvalidArgument("--directed and --undirected exclude each other");
  }
  opt.direction = f.directed     ? convert::Direction::kDirected
                  : f.undirected ? convert::Direction::kUndirected
                                 : convert::Direction::kDefault;
  opt.keep_self_loops = f.self_loops == "keep";
  opt.keep_duplicates = f.duplicates == "keep";
  if (!f.memory.empty() && (!ParseBytes(f.memory, &opt.memory_bytes) || opt.memory_bytes == 0)) {
    return Status::InvalidArgument("--memory '" + f.memory +
                                   "' is not a size (e.g. 1GiB, 512MiB, 2000000000)");
  }
  opt.features_npy = f.features;
  opt.labels_npy = f.labels;
  SKIFF_ASSIGN_OR_RETURN(opt.split, convert::ParseSplitSpec(f.split, f.seed));
  if (f.feature_dtype != "float32" && f.feature_dtype != "float16") {
    return Status::InvalidArgument("--feature-dtype must be float32 or float16");
  }
  opt.feature_dtype =
      f.feature_dtype == "float16" ? format::DType::kFloat16 : format::DType::kFloat32;
  SKIFF_ASSIGN_OR_RETURN(opt.id_map, convert::ParseIdMapMode(f.id_map));
  opt.overwrite = f.overwrite;
  opt.tmp_dir = f.tmp_dir;
  if (f.header && f.no_header) {
    return Status::InvalidArgument("--header and --no-header exclude each other");
  }
  opt.edge_list.header = f.header      ? convert::HeaderMode::kYes
                         : f.no_header ? convert::HeaderMode::kNo
                                       : convert::HeaderMode::kAuto;
  opt.edge_list.extra_columns_are_errors = f.extra_columns == "error";
  opt.ogb_split = f.ogb_split;
  opt.largest_component = f.largest_component;
  if (!f.split_edges.empty()) {
    const uint64_t seed = f.split_seed_opt->count() ? f.split_seed : f.seed;
    SKIFF_ASSIGN_OR_RETURN(opt.edge_split,
                           convert::ParseEdgeSplitSpec(f.split_edges, seed, "--split-edges"));
    opt.edge_split->candidates = f.split_candidates;
  }
  return opt;
}

void PrintSummary(const convert::ConvertSummary& s, const std::string& input,
                  const std::string& output) {
  const double rate = s.seconds > 0 ? static_cast<double>(s.input_edges) / s.seconds : 0;
  std::printf("converted    %s (%s) -> %s\n", input.c_str(), convert::InputFormatName(s.format),
              output.c_str());
  std::printf("nodes        %lld%s\n", static_cast<long long>(s.num_nodes),
              s.id_map_used ? " (raw IDs mapped; idmap/ keeps raw <-> dense)" : "");
  std::printf(
      "edges        %lld stored from %llu read (%llu duplicates, %llu self-loops dropped)\n",
      static_cast<long long>(s.num_edges), static_cast<unsigned long long>(s.input_edges),
      static_cast<unsigned long long>(s.duplicates_dropped),
      static_cast<unsigned long long>(s.self_loops_dropped));
  std::printf("features     %lld, classes %lld, splits %lld / %lld / %lld\n",
              static_cast<long long>(s.feature_dim), static_cast<long long>(s.num_classes),
              static_cast<long long>(s.train_count), static_cast<long long>(s.valid_count),
              static_cast<long long>(s.test_count));
  if (s.num_components > 0) {
    std::printf("component    largest of %lld: %lld of %lld nodes, %lld of %lld edges kept\n",
                static_cast<long long>(s.num_components), static_cast<long long>(s.num_nodes),
                static_cast<long long>(s.num_nodes + s.component_nodes_dropped),
                static_cast<long long>(s.num_edges),
                static_cast<long long>(s.num_edges + s.component_edges_dropped));
  }
  if (s.link_split) PrintEdgeSplit(*s.link_split, s.num_edges);
  if (s.format != convert::InputFormat::kNpz) {
    std::printf("sort         %s budget, %llu run%s spilled (%s)\n",
                FormatBytes(s.memory_budget_bytes).c_str(),
                static_cast<unsigned long long>(s.runs_spilled), s.runs_spilled == 1 ? "" : "s",
                FormatBytes(s.bytes_spilled).c_str());
  }
  if (s.id_map_used) {
    std::printf("id map       %lld IDs by sorting, %llu runs spilled (%s), bulk-loaded\n",
                static_cast<long long>(s.num_nodes),
                static_cast<unsigned long long>(s.id_runs_spilled),
                FormatBytes(s.id_bytes_spilled).c_str());
  }
  std::printf("time         %s, %s edges/s, peak RSS %s\n", FormatSeconds(s.seconds).c_str(),
              FormatCount(rate).c_str(), FormatBytes(PeakRssBytes()).c_str());
}

// Partitions the converted dataset in `staging` into the output (--partitions).
Status PartitionStaged(const ConvertFlags& f, partition::Algorithm algorithm,
                       const std::string& staging, uint64_t memory_bytes) {
  partition::PartitionOptions popt;
  popt.partitioner.algorithm = algorithm;
  popt.partitioner.k = f.partitions;
  popt.dataset_dir = staging;
  popt.output_dir = f.output;
  popt.overwrite = f.overwrite;
  if (memory_bytes > 0) popt.memory_bytes = memory_bytes;
  popt.show_progress = true;
  auto report = partition::PartitionDataset(popt);
  if (!report.ok()) {
    return report.status().WithContext("partitioning the converted dataset into " + f.output +
                                       " (nothing was written there)");
  }
  std::printf("partitions   %d (%s), edge cut %.2f%%, imbalance %.2f%%, %s\n", report->k,
              report->algorithm.c_str(), 100 * report->edge_cut_fraction, 100 * report->imbalance,
              FormatSeconds(report->seconds).c_str());
  return Status::Ok();
}

int RunConvert(const ConvertFlags& f) {
  if (Status st = CheckOutputSparesInput(f.output, {f.input, f.features, f.labels}); !st.ok()) {
    return ReportStatus("convert", st);
  }
  auto options = ConvertOptionsFrom(f);
  if (!options.ok()) return Usage(options.status().message());
  convert::ConvertOptions opt = std::move(options).value();
  KeepLargeBuffersMapped();  // every conversion has a budget (by default a quarter of the RAM)
  partition::Algorithm algorithm = partition::Algorithm::kGrem;
  if (f.partitions > 0) {
    auto algo = partition::ParseAlgorithm(f.partition_algo);
    if (!algo.ok()) return Usage(algo.status().message());
    algorithm = *algo;
  }

  // With --partitions the output is published once, partitioned: the conversion goes to a staging
  // sibling, which partitioning reads and which is removed afterwards, whatever happens (a killed
  // run's staging is removed by the next writer of the output: format::DatasetWriter).
  std::string staging;
  if (f.partitions > 0) {
    std::error_code ec;
    if (std::filesystem::exists(f.output, ec)) {
      // Before the conversion: the partitioned output is claimed only once it is converted.
      const Status replaceable = format::DatasetWriter::CheckReplaceable(f.output, f.overwrite);
      if (!replaceable.ok()) return ReportStatus("convert", replaceable);
    }
    staging = f.output + ".unpartitioned-" + std::to_string(::getpid());
    opt.output = staging;
    opt.overwrite = true;
  }
  // The unpartitioned dataset goes when this returns, or when the run is interrupted.
  struct RemoveStaging {
    const std::string& dir;
    const RemoveOnInterrupt if_interrupted =
        dir.empty() ? RemoveOnInterrupt() : RemoveOnInterrupt(dir);
    ~RemoveStaging() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } remove_staging{staging};
  auto result = convert::ConvertGraph(opt);
  if (!result.ok()) return ReportStatus("convert", result.status());
  PrintSummary(*result, opt.input, f.output);
  if (f.partitions > 0) {
    return ReportStatus("convert", PartitionStaged(f, algorithm, staging, opt.memory_bytes));
  }
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto f = std::make_shared<ConvertFlags>();
  app.description(
      "Convert a graph into a Skiff dataset, streaming, in bounded memory.\n"
      "Inputs: edge lists (SNAP/TSV/CSV/space-separated, '#'/'%' comments, optional header, .gz),\n"
      "METIS graphs (.graph/.metis), the OGB node-property raw layout (a directory with raw/),\n"
      "and .npz archives in the layout of cora.npz. See docs/convert.md.");
  app.add_option("input", f->input, "Input file or OGB directory")->required();
  app.add_option("output", f->output, "Dataset directory to create")->required();
  app.add_option("--format", f->format, "Input format: auto, edgelist, metis, npz or ogb")
      ->capture_default_str();
  app.add_flag("--directed", f->directed, "Store edges as given (default for edge lists and OGB)");
  app.add_flag("--undirected", f->undirected,
               "Store every edge in both directions (default for METIS)");
  app.add_option("--self-loops", f->self_loops, "keep or drop self-loops")
      ->check(CLI::IsMember({"keep", "drop"}))
      ->capture_default_str();
  app.add_option("--duplicates", f->duplicates, "keep or drop duplicate edges")
      ->check(CLI::IsMember({"keep", "drop"}))
      ->capture_default_str();
  app.add_option("--memory", f->memory,
                 "Memory budget, e.g. 1GiB (default: a quarter of physical memory)")
      ->check(NonEmpty());
  app.add_option("--features", f->features,
                 "Edge list/METIS: node features as .npy [N, D], row i = node i")
      ->check(CLI::ExistingFile);
  app.add_option("--labels", f->labels,
                 "Edge list/METIS: node labels as .npy [N] (integers, -1 = unlabelled)")
      ->check(CLI::ExistingFile);
  app.add_option("--split", f->split,
                 "Random split when the input has none: fractions 'train,valid,test' or "
                 "'per-class:TRAIN,VALID[,TEST]'")
      ->capture_default_str();
  app.add_option("--seed", f->seed, "Seed of the random split")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_option("--feature-dtype", f->feature_dtype, "float32 or float16")
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  app.add_option("--id-map", f->id_map,
                 "auto: identity when IDs are already dense integers [0,N), else RocksDB; always; "
                 "never (integer IDs used as node IDs)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_flag("--overwrite", f->overwrite, "Replace OUTPUT if it exists (atomically, at the end)");
  app.add_option("--tmp-dir", f->tmp_dir,
                 "Directory for sort spill files (default: inside OUTPUT's temporary directory)")
      ->check(NonEmpty());
  app.add_flag("--header", f->header, "Edge list: the first data line is a header");
  app.add_flag("--no-header", f->no_header,
               "Edge list: never treat the first line as a header (default: auto-detect)");
  app.add_option("--extra-columns", f->extra_columns,
                 "Edge list: columns after the first two are ignored or an error")
      ->check(CLI::IsMember({"ignore", "error"}))
      ->capture_default_str();
  app.add_option("--ogb-split", f->ogb_split,
                 "OGB: which split/<NAME> to use (default: the only one)");
  app.add_flag("--largest-component", f->largest_component,
               "Keep only the largest connected component (edge direction ignored), renumbered "
               "in ID order; drawn splits are drawn on it");
  CLI::Option* split_edges =
      app.add_option("--split-edges", f->split_edges,
                     "Hold out edges for link prediction: fractions 'TRAIN,VALID,TEST' (e.g. "
                     "0.85,0.05,0.1); valid and test edges leave the graph (docs/FORMAT.md)")
          ->check(NonEmpty());
  AddSplitCandidatesOption(app, &f->split_candidates, split_edges);
  f->split_seed_opt =
      app.add_option("--split-seed", f->split_seed, "Seed of the edge split (default: --seed)")
          ->check(NonNegative())
          ->needs(app.get_option("--split-edges"));
  CLI::Option* partitions =
      app.add_option("--partitions", f->partitions,
                     "Also partition the result into K parts (as `skiff partition -k K`); 0 = no")
          ->check(NonNegative())
          ->capture_default_str();
  app.add_option("--partition-algo", f->partition_algo,
                 "Partitioning algorithm with --partitions: grem, fennel, ldg or random")
      ->capture_default_str()
      ->needs(partitions);
  return [f] { return RunConvert(*f); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(convert, 10, Setup);
}  // namespace skiff::cli
