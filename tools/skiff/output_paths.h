// Guards for the paths a subcommand writes: an output must never destroy or alter an input.
//
// CheckOutputSparesInput refuses an output that is an input, or a directory containing one (the
// output is replaced as a whole, so the input would go with it). CheckNotInside refuses a file
// written inside a dataset directory (training and prediction never modify a dataset; a metrics
// file named DATASET/manifest.json would replace its manifest). Paths are compared after
// resolving symbolic links and "..", whether or not they exist yet.
//
// Thread safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::cli {

// InvalidArgument naming both paths when `output` is one of `inputs` or contains one.
Status CheckOutputSparesInput(const std::string& output, const std::vector<std::string>& inputs);

// InvalidArgument naming the option and the dataset when `path` lies inside `dataset_dir` (or is
// it). An empty `path` is fine (the option was not given).
Status CheckNotInside(const std::string& option, const std::string& path,
                      const std::string& dataset_dir);

}  // namespace skiff::cli
