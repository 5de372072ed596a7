// Fuzz target: a TOML training configuration (`skiff train --config`) through
// cli::ApplyConfigText -- toml++'s parser, then every key applied to a CLI11 app holding the real
// training options (tools/skiff/train_flags.h: each value checked by its table codec) -- then the
// given options parsed into TrainOptions, which must survive a checkpoint's JSON round trip
// unchanged.
#include <cstdint>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "fuzz/fuzz_input.h"
#include "skiff/status.h"
#include "skiff/train/train_options.h"
#include "tools/skiff/config_file.h"
#include "tools/skiff/train_flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CLI::App app;
  skiff::cli::TrainFlags flags;
  skiff::cli::AddTrainFlags(app, &flags);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!skiff::cli::ApplyConfigText(app, text, "fuzz/config.toml").ok()) return 0;
  skiff::train::TrainOptions options;
  if (!skiff::cli::ApplyTrainFlags(flags, skiff::cli::GivenIn(app), "", &options).ok()) return 0;
  const std::string saved = options.ToJson();
  const auto back = skiff::train::TrainOptions::FromJson(saved);
  SKIFF_CHECK_MSG(back.ok(), "a configuration the options accepted does not read back");
  SKIFF_CHECK_MSG(back->ToJson() == saved, "a configuration changed on its way through JSON");
  return 0;
}
