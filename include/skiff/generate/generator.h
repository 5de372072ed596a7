// Synthetic node-classification datasets (`skiff generate`), written straight into the dataset
// format. docs/generate.md describes the model, the presets and what the knobs mean.
//
// The model is a degree-corrected stochastic block model:
//   - node v belongs to class c(v) (classes of near-equal size, randomly placed over node IDs);
//   - every node has a power-law degree weight (Chung-Lu weights with exponent
//     `power_law_exponent`, offset so the largest expected degree is the "structural cutoff"
//     sqrt(N * avg_degree));
//   - node v draws its out-degree from its weight (mean `avg_degree`) and then each out-neighbour:
//     with probability `homophily` from its own class, otherwise from a uniformly chosen other
//     class; within the chosen class, proportionally to the degree weights. Rows are sorted,
//     de-duplicated and self loops dropped, so the stored edge count is slightly below
//     N * avg_degree.
//   - features: x_v = mu_{c(v)} + feature_noise * eps, where the class centroids mu_c are unit
//     vectors in a random min(F, C)-dimensional subspace and eps is approximately standard normal.
// The graph is directed: row v holds v's sampled out-neighbours (in-degrees are power-law too,
// since targets are drawn by weight). The dataset manifest says `undirected: false`.
//
// Generation streams: rows, features, labels and splits are produced in node order by worker
// threads over node ranges and appended to the dataset files, so memory is bounded by
// O(threads * chunk) plus O(C * F), independent of N. Every node's row, features and split
// membership depend only on (seed, node), so the output is byte-identical for any thread count.
//
// Thread safety: GenerateDataset may be called from any thread; it starts its own workers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/convert/splits.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::generate {

struct GenerateOptions {
  std::string output;  // dataset directory to create
  bool overwrite = false;
  std::string name = "synthetic";  // recorded in the manifest
  int64_t num_nodes = 10000;
  double avg_degree = 10;  // mean out-degree before de-duplication
  int64_t num_classes = 8;
  int64_t feature_dim = 64;
  double homophily = 0.8;           // fraction of edges whose endpoints share a class
  double power_law_exponent = 2.5;  // degree distribution P(d) ~ d^-exponent; must be > 1
  double feature_noise = 0.6;       // standard deviation of the per-dimension noise
  format::DType feature_dtype = format::DType::kFloat32;
  // Fractions: each node joins train/valid/test independently with those probabilities (counts
  // are binomial, not exact). Per-class: exactly that many nodes of each class (the rest to test
  // when test_per_class is -1).
  convert::SplitSpec split;
  uint64_t seed = 1;
  int threads = 0;  // worker threads; 0 = all hardware threads
};

// What a generation produced.
struct GenerateSummary {
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int64_t max_out_degree = 0;
  int64_t isolated_nodes = 0;  // nodes with no out-neighbours
  double edge_homophily = 0;   // measured fraction of stored edges inside a class
  int64_t train_count = 0, valid_count = 0, test_count = 0;
  uint64_t bytes_written = 0;  // data bytes of all files
  double seconds = 0;
};

// Names of the presets, smallest first: "small", "1m", "10m", "100m".
std::vector<std::string> PresetNames();
// The options of a preset (output, overwrite, seed and threads left at their defaults).
// InvalidArgument for an unknown name, listing the known ones.
Result<GenerateOptions> PresetOptions(const std::string& preset);

// Checks the options; InvalidArgument names the offending one and its valid range.
Status ValidateOptions(const GenerateOptions& options);

// Generates the dataset into options.output (atomically: nothing appears there unless the whole
// dataset was written). Fails with InvalidArgument on bad options, ResourceExhausted when the
// output file system is too small for the estimated size, IOError on write failures.
Result<GenerateSummary> GenerateDataset(const GenerateOptions& options);

// Estimated bytes of the dataset files (an upper bound: edges before de-duplication).
uint64_t EstimateBytes(const GenerateOptions& options);

}  // namespace skiff::generate
