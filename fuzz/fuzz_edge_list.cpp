// Fuzz target: an edge list (SNAP/CSV text) through convert::EdgeListReader, with header detection
// and with extra columns as errors.
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "skiff/convert/edge_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const skiff::fuzz::FuzzInput input(data, size, ".txt");
  for (const bool strict : {false, true}) {
    auto reader = skiff::convert::EdgeListReader::Open(
        input.path(),
        {.header = skiff::convert::HeaderMode::kAuto, .extra_columns_are_errors = strict});
    if (!reader.ok()) continue;
    std::string_view src, dst;
    while ((*reader)->Next(&src, &dst)) {
    }
  }
  return 0;
}
