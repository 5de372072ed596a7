// Fuzz target: a TOML training configuration (`skiff train --config`) through
// cli::ApplyConfigText: toml++'s parser, then every key applied to a CLI11 app with one option of
// each kind `skiff train` declares (integer with a range, float, choice, list, flag, byte size).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "fuzz/fuzz_input.h"
#include "tools/skiff/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CLI::App app;
  int epochs = 10;
  double lr = 0.01;
  std::string model = "sage";
  std::vector<int> fanouts;
  bool overwrite = false;
  std::string memory;
  app.add_option("--epochs", epochs)->check(CLI::Range(1, 1000000));
  app.add_option("--lr", lr)->check(CLI::PositiveNumber);
  app.add_option("--model", model)->check(CLI::IsMember({"sage", "gcn", "gat"}));
  app.add_option("--fanouts", fanouts)->delimiter(',');
  app.add_flag("--overwrite", overwrite);
  app.add_option("--memory", memory);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)skiff::cli::ApplyConfigText(app, text, "fuzz/config.toml");
  return 0;
}
