// Fuzz target: a METIS graph file through convert::MetisReader (header, every vertex line, the
// final edge count check).
#include <vector>

#include "fuzz/fuzz_input.h"
#include "skiff/convert/metis.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const skiff::fuzz::FuzzInput input(data, size, ".graph");
  auto reader = skiff::convert::MetisReader::Open(input.path());
  if (!reader.ok()) return 0;
  int64_t vertex = 0;
  std::vector<int64_t> neighbors;
  while ((*reader)->NextVertex(&vertex, &neighbors)) {
  }
  return 0;
}
