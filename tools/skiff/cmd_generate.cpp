// `skiff generate`: write a synthetic node-classification dataset (degree-corrected stochastic
// block model) straight into the dataset format. See docs/generate.md.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "skiff/generate/generator.h"
#include "skiff/log.h"
#include "skiff/process.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/edge_split_cli.h"

namespace skiff::cli {
namespace {

struct GenerateCliOptions {
  std::string preset;
  std::string out;
  bool overwrite = false;
  std::string name;
  int64_t nodes = 0;
  double avg_degree = 0;
  int64_t classes = 0;
  int64_t feature_dim = 0;
  double homophily = 0;
  double power_law_exponent = 0;
  double feature_noise = 0;
  std::string feature_dtype;
  std::string split;
  uint64_t seed = 1;
  std::string split_edges;
  uint64_t split_seed = 0;
  int64_t split_candidates = 0;
  int threads = 0;
  // Which options were given on the command line (they override the preset).
  CLI::Option* nodes_opt = nullptr;
  CLI::Option* avg_degree_opt = nullptr;
  CLI::Option* classes_opt = nullptr;
  CLI::Option* feature_dim_opt = nullptr;
  CLI::Option* homophily_opt = nullptr;
  CLI::Option* exponent_opt = nullptr;
  CLI::Option* noise_opt = nullptr;
  CLI::Option* dtype_opt = nullptr;
  CLI::Option* split_opt = nullptr;
  CLI::Option* name_opt = nullptr;
  CLI::Option* split_seed_opt = nullptr;
};

struct Generated {
  generate::GenerateSummary summary;
  std::optional<convert::EdgeSplitSummary> edge_split;
};

// Generates into opt.output; with `edge_split`, generates into unsplit/ inside the output's
// temporary directory and writes the output from there with the held-out edges (as `skiff
// convert --split-edges` does), so the output appears once, split.
Result<Generated> Generate(const generate::GenerateOptions& opt,
                           const std::optional<convert::EdgeSplitSpec>& edge_split) {
  Generated g;
  if (!edge_split) {
    SKIFF_ASSIGN_OR_RETURN(g.summary, generate::GenerateDataset(opt));
    return g;
  }
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
  const std::string unsplit_dir = writer->temp_dir() + "/unsplit";
  if (::mkdir(unsplit_dir.c_str(), 0755) != 0) {
    return Status::FromErrno(errno, "create directory " + unsplit_dir);
  }
  generate::GenerateOptions unsplit = opt;
  unsplit.output = unsplit_dir + "/dataset";
  unsplit.overwrite = false;
  SKIFF_ASSIGN_OR_RETURN(g.summary, generate::GenerateDataset(unsplit));
  {
    SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(unsplit.output));
    SKIFF_ASSIGN_OR_RETURN(g.edge_split, convert::WriteEdgeSplit(*ds, *writer, *edge_split));
    writer->manifest().source += ", edge split";
  }
  std::error_code ec;
  std::filesystem::remove_all(unsplit_dir, ec);
  if (ec) return Status::IOError("remove " + unsplit_dir + ": " + ec.message());
  SKIFF_RETURN_IF_ERROR(writer->Commit());
  return g;
}

int RunGenerate(const GenerateCliOptions& cli) {
  generate::GenerateOptions opt;
  if (!cli.preset.empty()) {
    auto preset = generate::PresetOptions(cli.preset);
    if (!preset.ok()) return ReportStatus("generate", preset.status());
    opt = *preset;
  } else if (cli.nodes_opt->count() == 0) {
    std::fprintf(stderr, "skiff generate: give --preset NAME or --nodes N (see --help)\n");
    return 2;
  }
  if (cli.nodes_opt->count()) opt.num_nodes = cli.nodes;
  if (cli.avg_degree_opt->count()) opt.avg_degree = cli.avg_degree;
  if (cli.classes_opt->count()) opt.num_classes = cli.classes;
  if (cli.feature_dim_opt->count()) opt.feature_dim = cli.feature_dim;
  if (cli.homophily_opt->count()) opt.homophily = cli.homophily;
  if (cli.exponent_opt->count()) opt.power_law_exponent = cli.power_law_exponent;
  if (cli.noise_opt->count()) opt.feature_noise = cli.feature_noise;
  if (cli.name_opt->count()) opt.name = cli.name;
  if (cli.dtype_opt->count()) {
    auto dtype = format::ParseDType(cli.feature_dtype);
    if (!dtype.ok()) return ReportStatus("generate", dtype.status().WithContext("--feature-dtype"));
    opt.feature_dtype = *dtype;
  }
  if (cli.split_opt->count()) {
    auto split = convert::ParseSplitSpec(cli.split, cli.seed);
    if (!split.ok()) return ReportStatus("generate", split.status().WithContext("--split"));
    opt.split = *split;
  }
  opt.split.seed = cli.seed;
  opt.seed = cli.seed;
  std::optional<convert::EdgeSplitSpec> edge_split;
  if (!cli.split_edges.empty()) {
    auto spec = convert::ParseEdgeSplitSpec(
        cli.split_edges, cli.split_seed_opt->count() ? cli.split_seed : cli.seed, "--split-edges");
    if (!spec.ok()) {
      std::fprintf(stderr, "skiff generate: %s\n", spec.status().message().c_str());
      return 2;
    }
    edge_split = *spec;
    edge_split->candidates = cli.split_candidates;
  }
  opt.threads = cli.threads;
  opt.output = cli.out;
  opt.overwrite = cli.overwrite;
  auto generated = Generate(opt, edge_split);
  if (!generated.ok()) return ReportStatus("generate", generated.status());
  const auto& s = generated->summary;
  std::printf("generated    %s\n", opt.output.c_str());
  std::printf("nodes        %lld (%lld classes)\n", static_cast<long long>(s.num_nodes),
              static_cast<long long>(opt.num_classes));
  std::printf(
      "edges        %lld directed (mean out-degree %.2f, max %lld, %lld nodes without "
      "out-edges)\n",
      static_cast<long long>(s.num_edges),
      static_cast<double>(s.num_edges) / static_cast<double>(s.num_nodes),
      static_cast<long long>(s.max_out_degree), static_cast<long long>(s.isolated_nodes));
  std::printf("homophily    %.3f of edges within a class (asked %.3f)\n", s.edge_homophily,
              opt.homophily);
  std::printf("features     %lld x %s\n", static_cast<long long>(opt.feature_dim),
              format::DTypeName(opt.feature_dtype));
  std::printf("splits       train %lld / valid %lld / test %lld\n",
              static_cast<long long>(s.train_count), static_cast<long long>(s.valid_count),
              static_cast<long long>(s.test_count));
  if (generated->edge_split) {
    PrintEdgeSplit(generated->edge_split->split, generated->edge_split->edges_after);
  }
  std::printf("written      %s in %s (%s nodes/s), peak RSS %s\n",
              FormatBytes(s.bytes_written).c_str(), FormatSeconds(s.seconds).c_str(),
              FormatCount(static_cast<double>(s.num_nodes) / std::max(s.seconds, 1e-9)).c_str(),
              FormatBytes(PeakRssBytes()).c_str());
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<GenerateCliOptions>();
  std::string presets;
  for (const auto& p : generate::PresetNames()) presets += (presets.empty() ? "" : ", ") + p;
  app.description(
      "Generate a synthetic node-classification dataset (degree-corrected stochastic block model)");
  app.footer(
      "Power-law degrees, tunable homophily and noisy class-correlated features, streamed into\n"
      "the dataset format. Edges are directed: row v holds v's sampled out-neighbours. The same\n"
      "options and seed give byte-identical files at any thread count. Start from a preset and\n"
      "override any option, or give --nodes and the rest. Presets and the model: docs/generate.md");
  app.add_option("--preset", o->preset, "Preset: " + presets + " (see docs/generate.md)");
  app.add_option("--out", o->out, "Dataset directory to create")->required()->check(NonEmpty());
  app.add_flag("--overwrite", o->overwrite, "Replace the output directory if it exists");
  o->nodes_opt = app.add_option("--nodes", o->nodes, "Number of nodes");
  o->avg_degree_opt =
      app.add_option("--avg-degree", o->avg_degree, "Mean out-degree before de-duplication [10]");
  o->classes_opt = app.add_option("--classes", o->classes, "Number of classes [8]");
  o->feature_dim_opt = app.add_option("--feature-dim", o->feature_dim, "Feature dimension [64]");
  o->homophily_opt = app.add_option("--homophily", o->homophily,
                                    "Fraction of edges within the source node's class, 0..1 [0.8]");
  o->exponent_opt = app.add_option("--power-law-exponent", o->power_law_exponent,
                                   "Degree distribution exponent, > 1.05 [2.5]");
  o->noise_opt = app.add_option("--feature-noise", o->feature_noise,
                                "Std-dev of per-dimension feature noise around unit-norm class "
                                "centroids [0.6]");
  o->dtype_opt = app.add_option("--feature-dtype", o->feature_dtype,
                                "Feature storage: float32 or float16 [float32; float16 for 100m]");
  o->split_opt = app.add_option("--split", o->split,
                                "Fractions 'TRAIN,VALID[,TEST]' (each node independently) or "
                                "'per-class:TRAIN,VALID[,TEST]' counts [0.6,0.2,0.2; presets "
                                "differ]");
  app.add_option("--seed", o->seed, "Random seed [1]")->check(NonNegative());
  CLI::Option* split_edges =
      app.add_option("--split-edges", o->split_edges,
                     "Hold out edges for link prediction: fractions 'TRAIN,VALID,TEST' (e.g. "
                     "0.85,0.05,0.1); valid and test edges leave the graph (docs/FORMAT.md)")
          ->check(NonEmpty());
  AddSplitCandidatesOption(app, &o->split_candidates, split_edges);
  o->split_seed_opt =
      app.add_option("--split-seed", o->split_seed, "Seed of the edge split [--seed]")
          ->check(NonNegative())
          ->needs(app.get_option("--split-edges"));
  app.add_option("--threads", o->threads,
                 "Worker threads, 0 = all cores [0]; output does not "
                 "depend on it")
      ->check(NonNegative());
  o->name_opt = app.add_option("--name", o->name, "Dataset name recorded in the manifest");
  return [o] { return RunGenerate(*o); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(generate, 20, Setup);
}  // namespace skiff::cli
