// The gather and the scatter kernels under every launch choice detail::SpmmTuning allows (each
// kernel instantiation, long-row thresholds from "every row is long" to "none is", one long-row
// block to many, every slice width, persistent grids from 3 blocks up) compute the same sums as
// the CPU references (forward and backward), over a power-law block, a few awkward ones, and
// several segments per row (GAT heads). The production launches take their defaults; the
// benchmark perf_spmm_tuning.cpp times the others.
//
// Tolerance: as test_aggregate.cpp (|gpu - cpu| <= 1e-5 * M + 1e-6, M the sum of absolute terms).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cuda/spmm.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

using cpu::AggregateMode;
using cuda::detail::SpmmArgs;
using cuda::detail::SpmmTuning;
using cuda::detail::WeightKind;

struct LongChoice {
  int64_t edges, blocks, slice;
};

const LongChoice kLongChoices[] = {{96, 512, 64},   {128, 512, 32}, {0, 1, 128},  {64, 7, 64},
                                   {512, 132, 128}, {1, 512, 64},   {256, 3, 32}, {128, 264, 128}};

void SetLong(const LongChoice& l, SpmmTuning* t) {
  t->long_row_edges = l.edges;
  t->max_long_blocks = l.blocks;
  t->long_slice_cols = l.slice;
}

// The gather: each kernel instantiation (unroll x occupancy x persistent grid) once, with long-row
// choices cycling through corners.
std::vector<SpmmTuning> GatherTunings() {
  std::vector<SpmmTuning> tunings;
  size_t next = 0;
  for (int unroll : {4, 8}) {
    for (int min_blocks : {1, 4, 5, 6}) {
      for (int64_t short_blocks : {int64_t{0}, int64_t{3}, cuda::detail::kShortBlocksAuto}) {
        SpmmTuning t;
        t.unroll = unroll;
        t.min_blocks = min_blocks;
        t.short_blocks = short_blocks;
        SetLong(kLongChoices[next++ % std::size(kLongChoices)], &t);
        tunings.push_back(t);
      }
    }
  }
  return tunings;
}

// The scatter (which has no unroll or occupancy choice): every long-row choice, with warp per row,
// a 3-block persistent grid and the default-sized one in turn.
std::vector<SpmmTuning> ScatterTunings() {
  std::vector<SpmmTuning> tunings;
  const int64_t shorts[] = {0, 3, cuda::detail::kShortBlocksAuto};
  size_t next = 0;
  for (const LongChoice& l : kLongChoices) {
    SpmmTuning t = cuda::detail::kScatterTuning;
    SetLong(l, &t);
    t.short_blocks = shorts[next++ % std::size(shorts)];
    tunings.push_back(t);
  }
  return tunings;
}

// Small blocks with long and short rows: every kernel path at little cost (what racecheck runs).
std::vector<Block> SmallBlocks() {
  std::vector<Block> blocks;
  blocks.push_back(MakeBlock("no edges", 7, std::vector<int64_t>(5, 0), 1));
  blocks.push_back(MakeBlock("one row of 2000", 300, {2000}, 2));
  blocks.push_back(MakeBlock("300 rows of 0..700", 5000, UniformDegrees(300, 0, 700, 63), 64));
  return blocks;
}

// A power-law block: many short rows and a tail of long ones, more units than a search round.
Block PowerLawBlock() {
  std::mt19937_64 rng(61);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int64_t> degrees(6000);
  for (auto& d : degrees) {
    d = std::min<int64_t>(3000, static_cast<int64_t>(2.0 / std::pow(1.0 - u(rng), 1.0 / 1.3)));
  }
  return MakeBlock("power-law 6000 x 20000", 20000, degrees, 62);
}

// The CPU's answer and the magnitudes that scale its tolerance (the same op over |input|).
struct Expected {
  std::vector<float> out, magnitude;
};

using CpuOp = void (*)(int64_t, int64_t, const int64_t*, const int32_t*, const float*,
                       AggregateMode, const float*, int64_t, float*);

Expected Reference(CpuOp op, const Block& b, const float* w, AggregateMode mode,
                   const std::vector<float>& in, int64_t width, int64_t out_rows) {
  Expected e{std::vector<float>(out_rows * width), std::vector<float>(out_rows * width)};
  op(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), w, mode, in.data(), width,
     e.out.data());
  const std::vector<float> abs_in = Abs(in);
  op(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), w, mode, abs_in.data(), width,
     e.magnitude.data());
  return e;
}

// One (block, row width, mode) against the CPU: the gather under every gather tuning, the scatter
// under every scatter tuning. `segments` > 1 is checked as the kOne / kRowMean sum it equals over
// rows of segments * dim columns.
void CheckUnderTunings(const Block& b, int64_t segments, int64_t dim, AggregateMode mode,
                       const TestStream& stream) {
  const cudaStream_t s = stream.get();
  const int64_t width = segments * dim;
  const std::vector<float> x = RandomFloats(b.num_src * width, 71);
  const std::vector<float> g = RandomFloats(b.num_dst * width, 73);
  const std::vector<float> w = RandomFloats(b.nnz(), 72, 0.1f, 1.0f);
  const float* w_cpu = mode == AggregateMode::kWeighted ? w.data() : nullptr;
  const Expected forward = Reference(cpu::CsrAggregateForward, b, w_cpu, mode, x, width, b.num_dst);
  const Expected backward =
      Reference(cpu::CsrAggregateBackward, b, w_cpu, mode, g, width, b.num_src);

  const DeviceBuffer<int64_t> indptr(b.indptr, s);
  const DeviceBuffer<int32_t> indices(b.indices, s);
  const DeviceBuffer<float> dw(w, s), dx(x, s), dg(g, s);
  DeviceBuffer<float> out(b.num_dst * width), grad_x(b.num_src * width);
  SpmmArgs a;
  a.num_rows = b.num_dst;
  a.indptr = indptr.get();
  a.indices = indices.get();
  a.weight_kind = mode == AggregateMode::kSum    ? WeightKind::kOne
                  : mode == AggregateMode::kMean ? WeightKind::kRowMean
                                                 : WeightKind::kEdge;
  a.edge_weight = dw.get();
  a.segments = segments;
  a.dim = dim;
  const std::string what = b.name + ", " + std::to_string(segments) + " x dim " +
                           std::to_string(dim) + ", mode " + std::to_string(static_cast<int>(mode));
  for (const SpmmTuning& t : GatherTunings()) {
    a.x = dx.get();
    a.out = out.get();
    out.Fill(0xff, s);  // NaN pattern: every element must be written
    SKIFF_REQUIRE_OK(cuda::detail::LaunchSpmmGather(a, s, t));
    ExpectClose(out.Download(s), forward.out, 1e-5f, 1e-6f,
                what + ", gather, " + cuda::detail::DescribeTuning(t), &forward.magnitude);
  }
  for (const SpmmTuning& t : ScatterTunings()) {
    a.x = dg.get();
    a.out = grad_x.get();
    grad_x.Fill(0, s);  // the scatter accumulates
    SKIFF_REQUIRE_OK(cuda::detail::LaunchSpmmScatter(a, s, t));
    ExpectClose(grad_x.Download(s), backward.out, 1e-5f, 1e-6f,
                what + ", scatter, " + cuda::detail::DescribeTuning(t), &backward.magnitude);
  }
}

// Every row width and mode over `b`: dims 1 and 129 (scalar), 36 and 128 (float4), and GAT-like
// heads, 3 segments of 12 (float4) and of 5 (scalar) columns.
void CheckBlockUnderTunings(const Block& b, const TestStream& stream) {
  for (int64_t dim : {1, 36, 128, 129}) {
    for (AggregateMode mode :
         {AggregateMode::kSum, AggregateMode::kMean, AggregateMode::kWeighted}) {
      CheckUnderTunings(b, 1, dim, mode, stream);
    }
  }
  for (int64_t dim : {12, 5}) CheckUnderTunings(b, 3, dim, AggregateMode::kSum, stream);
}

TEST_CASE("Spmm gather and scatter match the CPU under every launch tuning: small blocks") {
  TestStream stream;
  for (const Block& b : SmallBlocks()) CheckBlockUnderTunings(b, stream);
}

TEST_CASE("Spmm gather and scatter match the CPU under every launch tuning: a power-law block") {
  TestStream stream;
  CheckBlockUnderTunings(PowerLawBlock(), stream);
}

TEST_CASE("Spmm gather and scatter refuse a tuning outside the allowed values") {
  TestStream stream;
  SpmmArgs a;  // no rows: the tuning is checked before anything is launched
  for (const auto& bad : std::vector<SpmmTuning>{{.long_slice_cols = 48},
                                                 {.unroll = 6},
                                                 {.min_blocks = 3},
                                                 {.max_long_blocks = 0},
                                                 {.long_row_edges = -1},
                                                 {.short_blocks = -2}}) {
    for (const Status& st : {cuda::detail::LaunchSpmmGather(a, stream.get(), bad),
                             cuda::detail::LaunchSpmmScatter(a, stream.get(), bad)}) {
      CHECK(st.code() == StatusCode::kInvalidArgument);
      CHECK(st.message().find("SpmmTuning") != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace skiff::gpu_testing
