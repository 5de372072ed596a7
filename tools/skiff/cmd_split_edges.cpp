// `skiff split-edges INPUT OUTPUT --split-edges TRAIN,VALID,TEST [--seed S]`: hold out edges of an
// existing dataset for link prediction (convert::WriteEdgeSplit; docs/FORMAT.md, "Edge splits").
// Also the shared pieces of edge_split_cli.h.
#include <cstdio>
#include <memory>

#include "skiff/process.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"
#include "tools/skiff/edge_split_cli.h"
#include "tools/skiff/output_paths.h"

namespace skiff::cli {

std::string EdgeSplitOrigin(const format::LinkSplitInfo& s) {
  // A split the input gave (OGB's split files) records no fractions and no seed.
  if (s.train_fraction == 0 && s.valid_fraction == 0 && s.test_fraction == 0 && s.seed == 0) {
    return "given by the input";
  }
  char text[96];
  std::snprintf(text, sizeof(text), "asked %.3g/%.3g/%.3g, seed %llu", s.train_fraction,
                s.valid_fraction, s.test_fraction, static_cast<unsigned long long>(s.seed));
  return text;
}

void PrintEdgeSplit(const format::LinkSplitInfo& s, int64_t edges_after) {
  std::printf(
      "edge split   train %lld / valid %lld / test %lld pairs (%s), %lld + %lld non-edges; graph "
      "keeps %lld edges\n",
      static_cast<long long>(s.train), static_cast<long long>(s.valid),
      static_cast<long long>(s.test), EdgeSplitOrigin(s).c_str(),
      static_cast<long long>(s.valid_neg), static_cast<long long>(s.test_neg),
      static_cast<long long>(edges_after));
}

Result<convert::EdgeSplitSummary> SplitEdgesInto(const std::string& input,
                                                 const std::string& output, bool overwrite,
                                                 const convert::EdgeSplitSpec& spec,
                                                 const std::string& source_note) {
  SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(input));
  SKIFF_RETURN_IF_ERROR(ds->RequireWhole("splitting its edges"));
  SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(output, overwrite));
  SKIFF_ASSIGN_OR_RETURN(auto summary, convert::WriteEdgeSplit(*ds, *writer, spec));
  writer->manifest().source += source_note;
  SKIFF_RETURN_IF_ERROR(writer->Commit());
  return summary;
}

void AddSplitCandidatesOption(CLI::App& app, int64_t* candidates, CLI::Option* split_edges) {
  app.add_option("--split-candidates", *candidates,
                 "Also draw K ranking candidates per valid and test edge (uniform destinations, "
                 "as OGB's ogbl-citation2 gives 1000; directed datasets only)")
      ->check(NonNegative())
      ->needs(split_edges);
}

namespace {

struct SplitEdgesOptions {
  std::string input, output;
  std::string fractions;
  uint64_t seed = 0;
  int64_t candidates = 0;
  bool overwrite = false;
};

int RunSplitEdges(const SplitEdgesOptions& o) {
  if (Status st = CheckOutputSparesInput(o.output, {o.input}); !st.ok()) {
    return ReportStatus("split-edges", st);
  }
  auto spec = convert::ParseEdgeSplitSpec(o.fractions, o.seed, "--split-edges");
  if (!spec.ok()) {
    std::fprintf(stderr, "skiff split-edges: %s\n", spec.status().message().c_str());
    return 2;
  }
  spec->candidates = o.candidates;
  auto summary = SplitEdgesInto(o.input, o.output, o.overwrite, *spec, ", edge split");
  if (!summary.ok()) return ReportStatus("split-edges", summary.status());
  std::printf("split        %s -> %s\n", o.input.c_str(), o.output.c_str());
  PrintEdgeSplit(summary->split, summary->edges_after);
  std::printf("peak RSS     %s\n", FormatBytes(PeakRssBytes()).c_str());
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<SplitEdgesOptions>();
  app.description(
      "Hold out edges of a dataset for link prediction: valid and test edges leave the graph, "
      "train edges stay, and one non-edge is drawn per valid and test edge (docs/FORMAT.md)");
  app.add_option("input", o->input, "Dataset directory (unpartitioned, without an edge split)")
      ->required();
  app.add_option("output", o->output, "Dataset directory to create")->required();
  CLI::Option* fractions =
      app.add_option("--split-edges", o->fractions,
                     "Fractions 'TRAIN,VALID,TEST' of the edges (e.g. 0.85,0.05,0.1)")
          ->required()
          ->check(NonEmpty());
  AddSplitCandidatesOption(app, &o->candidates, fractions);
  app.add_option("--seed", o->seed, "Seed of the split")
      ->capture_default_str()
      ->check(NonNegative());
  app.add_flag("--overwrite", o->overwrite, "Replace OUTPUT if it exists (atomically, at the end)");
  return [o] { return RunSplitEdges(*o); };
}

}  // namespace
// The macro pastes the name into an identifier, which cannot hold '-'.
static const bool skiff_registered_split_edges = Register("split-edges", 25, Setup);
}  // namespace skiff::cli
