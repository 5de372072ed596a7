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

// For an option naming a file to write (--checkpoint, --metrics): InvalidArgument naming the
// option when the file's directory does not exist or cannot be written, so that a run finds out
// before its work rather than at its first write. An empty `path` is fine.
Status CheckWritableDirectoryOf(const std::string& option, const std::string& path);

// For an option naming an export directory (--export, --out): InvalidArgument naming the option
// when `path` exists and an export may not replace it (train::ExportReplaceable).
Status CheckExportTarget(const std::string& option, const std::string& path);

}  // namespace skiff::cli
