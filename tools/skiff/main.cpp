// skiff: out-of-core GNN training from SSD. Entry point; subcommands register themselves
// (see command.h).
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "kernels/cpu/blas_core.h"
#include "skiff/interrupt.h"
#include "skiff/log.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"

namespace skiff::cli {

std::vector<Command>& Registry() {
  static std::vector<Command> commands;
  return commands;
}

bool Register(std::string name, int order, SetupFn setup) {
  Registry().push_back(Command{std::move(name), order, std::move(setup)});
  return true;
}

int ReportStatus(const std::string& command, const Status& status) {
  if (status.ok()) return 0;
  // An interrupted run's files vanish under it: its errors say nothing new.
  if (!Interrupted()) {
    std::fprintf(stderr, "skiff %s: %s\n", command.c_str(), status.ToString().c_str());
  }
  return 1;
}

// Runs a parsed command; what it throws becomes a message and exit status 1.
int RunCommand(const std::string& name, const RunFn& run) {
  try {
    return run();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "skiff %s: error: out of memory: an allocation failed (check sizes given as "
                 "options, such as --hidden, --fanouts, --batch-size and --memory)\n",
                 name.c_str());
  } catch (const std::exception& e) {
    if (!Interrupted()) std::fprintf(stderr, "skiff %s: error: %s\n", name.c_str(), e.what());
  }
  return 1;
}

void KeepLargeBuffersMapped() {
  // A budget is a promise about RSS: large buffers (staging, rounds of rows, sort runs) are mapped
  // and unmapped on their own, so freeing one returns it to the system at once. glibc would
  // otherwise raise its mmap threshold after the first such free and carve later ones from the
  // heap -- or from a worker thread's arena -- where freed space stays resident (10% of the
  // 2M-node training benchmark: peak RSS 234 MiB -> 184 MiB; converting 100M string-ID edges from
  // a pipe at 1 GiB: 118 MiB of freed blocks left in the interning thread's arena). Without a
  // budget the heap's reuse is kept: it saves a third of the page faults.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

Result<uint64_t> ParseMemoryOption(const std::string& text) {
  uint64_t bytes = 0;
  if (!text.empty() && (!ParseBytes(text, &bytes) || bytes == 0)) {
    return Status::InvalidArgument("--memory '" + text + "': expected a size such as 4GiB");
  }
  if (bytes > 0) KeepLargeBuffersMapped();
  return bytes;
}

}  // namespace skiff::cli

int main(int argc, char** argv) {
  // Before anything else runs: OpenBLAS may have chosen slow kernels for a CPU it does not know.
  skiff::cpu::RestartWithBlasCoreIfNeeded(argv);
  CLI::App app{
      "Skiff trains graph neural networks on graphs whose features and edges do not fit in\n"
      "memory, from SSD, on one workstation.",
      "skiff"};
  app.set_version_flag("--version", std::string("skiff ") + SKIFF_VERSION
#ifdef SKIFF_HAVE_CUDA
                                        + " (CUDA kernels built)"
#else
                                        + " (CPU only)"
#endif
  );
  app.require_subcommand(1);
  bool quiet = false, verbose = false;
  app.add_flag("-q,--quiet", quiet, "Only print warnings and errors");
  app.add_flag("-v,--verbose", verbose, "Print debug output");

  auto& registry = skiff::cli::Registry();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  std::map<CLI::App*, skiff::cli::RunFn> runners;
  for (auto& command : registry) {
    CLI::App* sub = app.add_subcommand(command.name);
    runners[sub] = command.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version succeed (0); every usage error exits 2, as documented, rather than
    // CLI11's own codes (100-120), which a shell script cannot tell from a crash or a signal.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (quiet) skiff::SetLogLevel(skiff::LogLevel::kWarning);
  if (verbose) skiff::SetLogLevel(skiff::LogLevel::kDebug);
  // After the restart above and before any thread starts (see interrupt.h).
  skiff::InstallInterruptCleanup();
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) {
      const int rc = skiff::cli::RunCommand(sub->get_name(), run);
      skiff::WaitIfInterrupted();  // the cleanup ends the process by its signal
      return rc;
    }
  }
  return 2;
}
