// Subcommand registry for the `skiff` executable.
//
// Each subcommand lives in its own tools/skiff/cmd_<name>.cpp and registers itself at static
// initialisation with SKIFF_REGISTER_COMMAND. Setup adds the CLI11 subcommand and its options and
// returns the function main() runs when that subcommand is chosen; that function returns the
// process exit code (0 on success, 1 on an operating error already reported, 2 on bad usage).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "skiff/status.h"
#include "tools/skiff/option_checks.h"

namespace skiff::cli {

using RunFn = std::function<int()>;
using SetupFn = std::function<RunFn(CLI::App& app)>;

struct Command {
  std::string name;
  int order;  // position in `skiff --help`
  SetupFn setup;
};

std::vector<Command>& Registry();
bool Register(std::string name, int order, SetupFn setup);

// Prints "skiff <command>: <status>" to stderr and returns exit code 1 (or 0 when OK).
int ReportStatus(const std::string& command, const Status& status);

// The value of a `--memory` option of train and predict: 0 when empty (no budget: every partition
// resident); InvalidArgument naming the text unless it is a positive size ("4GiB"). A budget also
// makes the allocator return large freed buffers to the system at once (see main.cpp).
Result<uint64_t> ParseMemoryOption(const std::string& text);
// Makes glibc map every buffer of 1 MiB or more on its own (M_MMAP_THRESHOLD), so that freeing it
// lowers RSS at once: for commands that promise a memory budget. ParseMemoryOption calls it when a
// budget is given.
void KeepLargeBuffersMapped();

}  // namespace skiff::cli

#define SKIFF_REGISTER_COMMAND(name, order, setup) \
  static const bool skiff_registered_##name = ::skiff::cli::Register(#name, order, setup)
