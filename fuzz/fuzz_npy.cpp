// Fuzz target: a .npy file through io::NpyReader (header, then every element, converted).
#include <algorithm>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "skiff/io/npy.h"

namespace {

// Reads every element of `reader` in chunks, as the converters do; stops at the first error.
void ReadAll(skiff::io::NpyReader& reader) {
  constexpr int64_t kChunk = 4096;
  const int64_t n = reader.header().num_elements();
  std::vector<float> floats(kChunk);
  std::vector<int64_t> ints(kChunk);
  for (int64_t done = 0; done < n;) {
    const int64_t count = std::min(kChunk, n - done);
    const skiff::Status status = reader.header().is_integer()
                                     ? reader.ReadInt64(count, ints.data())
                                     : reader.ReadFloat(count, floats.data());
    if (!status.ok()) return;
    done += count;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const skiff::fuzz::FuzzInput input(data, size, ".npy");
  auto reader = skiff::io::NpyReader::OpenFile(input.path());
  if (reader.ok()) ReadAll(**reader);
  return 0;
}
