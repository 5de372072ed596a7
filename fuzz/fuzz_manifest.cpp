// Fuzz target: a dataset manifest (manifest.json) through format::Manifest::FromJson, which parses
// and validates it (fields, types, ranges, partition boundaries, file entries).
#include <string>

#include "fuzz/fuzz_input.h"
#include "skiff/format/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)skiff::format::Manifest::FromJson(text, "fuzz/manifest.json");
  return 0;
}
