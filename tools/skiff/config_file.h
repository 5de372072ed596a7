// TOML configuration files for a command's options (`skiff train --config run.toml`): keys are the
// long option names at the top level, values are what the option takes on the command line
// (strings, numbers, booleans, or arrays of them for list options; an array for an option of one
// value is its comma-separated text: `fanouts = [15, 10]`). Options given on the command
// line win: a key whose option already has a value is skipped.
//
// Errors are InvalidArgument naming the source and the line and column (a TOML syntax error) or
// the key (unknown, a [section], a value of a type no option takes, or a value the option
// rejects). Parsing is toml++'s; the text is never executed or expanded.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "skiff/status.h"

namespace skiff::cli {

// Applies the TOML document `text` (read from `source`, for messages) to `app`'s options.
Status ApplyConfigText(CLI::App& app, std::string_view text, const std::string& source);
// The same for the file at `path` (which must be a regular file).
Status ApplyConfigFile(CLI::App& app, const std::string& path);

}  // namespace skiff::cli
