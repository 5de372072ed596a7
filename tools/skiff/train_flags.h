// The options of train::TrainOptionTable() on a command line: one `--NAME` per table entry, with
// its default shown in --help and its value checked by the entry's codec when parsed (so a value
// the option cannot take is a CLI11 validation error -- a usage error -- whether it comes from the
// command line or from a --config file), and the given ones parsed into a TrainOptions.
//
// Thread safety: none needed (command-line set-up and parsing run on one thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "skiff/status.h"
#include "skiff/train/train_options.h"

namespace skiff::cli {

struct TrainFlags {
  std::vector<std::string> text;  // per TrainOptionTable() entry, as given
  std::vector<bool> added;        // per entry: whether AddTrainFlags put it on the command line
};

// Adds every table entry to `app` (or those named in `only`, when it is not empty), its text
// landing in flags->text (which must outlive `app`).
void AddTrainFlags(CLI::App& app, TrainFlags* flags, const std::vector<std::string>& only = {});

// Whether an option of `app` ("--batch-size") was given, on the command line or by a --config file
// applied to it: the `given` of ApplyTrainFlags. `app` must outlive the result.
std::function<bool(const std::string&)> GivenIn(const CLI::App& app);

// Parses the entries `given` ("--batch-size" -> true when it was given) into *options, among
// those AddTrainFlags added (a command's own option of the same name is its own). With a
// non-empty `resume_path` (a resumed run), run-defining entries are not applied: each given one is
// reported with a warning, since the run keeps the value saved in that checkpoint.
Status ApplyTrainFlags(const TrainFlags& flags,
                       const std::function<bool(const std::string&)>& given,
                       const std::string& resume_path, train::TrainOptions* options);

}  // namespace skiff::cli
