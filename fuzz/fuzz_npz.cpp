// Fuzz target: a .npz archive through io::ListNpzEntries and NpyReader::OpenNpzEntry (the zip
// directory, stored and deflated entries, each entry's .npy header and data).
#include <algorithm>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "skiff/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const skiff::fuzz::FuzzInput input(data, size, ".npz");
  auto entries = skiff::io::ListNpzEntries(input.path());
  if (!entries.ok()) return 0;
  constexpr int64_t kChunk = 4096;
  std::vector<float> floats(kChunk);
  for (size_t e = 0; e < std::min<size_t>(entries->size(), 4); ++e) {
    auto reader = skiff::io::NpyReader::OpenNpzEntry(input.path(), (*entries)[e]);
    if (!reader.ok()) continue;
    const int64_t n = (*reader)->header().num_elements();
    for (int64_t done = 0; done < n;) {
      const int64_t count = std::min(kChunk, n - done);
      if (!(*reader)->ReadFloat(count, floats.data()).ok()) break;
      done += count;
    }
  }
  return 0;
}
