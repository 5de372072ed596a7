// Fuzz target: the OGB CSV readers (num-node-list, split index files, labels). The first byte picks
// the reader; the rest is the file.
#include "fuzz/fuzz_input.h"
#include "skiff/convert/ogb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const skiff::fuzz::FuzzInput input(data + 1, size - 1, ".csv");
  constexpr int64_t kNodes = 1000;
  switch (data[0] % 3) {
    case 0:
      (void)skiff::convert::ReadOgbNumNodes(input.path());
      break;
    case 1:
      (void)skiff::convert::ReadOgbIndexFile(input.path(), kNodes);
      break;
    default:
      (void)skiff::convert::ReadOgbLabels(input.path(), kNodes);
      break;
  }
  return 0;
}
