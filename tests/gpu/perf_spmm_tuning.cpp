// Benchmarks (skipped in a normal run; `skiff_gpu_tests --perf` runs them, or one alone with
// --no-skip=true --test-case="perf: gather tuning sweep around*"): the aggregation kernels under
// the launch choices of detail::SpmmTuning (kernels/cuda/spmm.cuh), so the defaults are chosen,
// and checked again on a new GPU, from measurements. The gather runs on the blocks of
// perf_aggregate.cpp, on two blocks the size of a training batch's layers and on the transposed
// blocks the backward's gather walks; the scatter on the same forward blocks, scattering into
// their sources. Three sweeps:
//   gather, one choice at a time   the short-row choices (unroll, __launch_bounds__ occupancy,
//                          persistent grid), then the long-row ones (threshold, long-row blocks,
//                          slice width), then the best three of each combined
//   gather, around the defaults    persistent grid size x threshold x slice x long-row blocks, at
//                          the defaults' unroll and occupancy
//   scatter                threshold x slice x persistent grid, then the long-row blocks
// Prints, per tuning and block, "tuning <tuning> <block> ms=.. vs_default=.. vs_cusparse=..", and
// per tuning "tuning-score <tuning> all=.. powerlaw=.. uniform=.. transposed=.. wide=..
// sampled=..": the geometric mean over those blocks of default_ms / ms (above 1: faster than the
// sweep's defaults), and for the power-law blocks also the geometric mean speedup over cuSPARSE (A
// x for the gather, A^T g for the scatter). The defaults are timed first and last (the spread
// between the two is the noise floor). <tuning> is detail::DescribeTuning's (short_blocks=-1: 32
// per SM).
//
// Every tuning's answer on the dim-32 blocks is compared with cuSPARSE's (the GPU tests check
// every tuning against the CPU on awkward blocks: test_spmm_tuning.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/spmm.cuh"
#include "tests/gpu/perf_util.h"

namespace skiff::gpu_testing {
namespace {

using cuda::detail::SpmmArgs;
using cuda::detail::SpmmTuning;

// One block a kernel walks, on the device: for the gather, a forward block (sum over sources,
// checked against cuSPARSE's A x) or a forward block's transpose (the backward gather); for the
// scatter, a forward block scattering into its sources (checked against cuSPARSE's A^T g).
struct BenchCase {
  std::string name;
  std::string family;  // "powerlaw", "uniform", "wide", "sampled" or "transposed"
  bool scatter = false;
  int64_t rows = 0, dim = 0;
  DeviceBuffer<int64_t> indptr;
  DeviceBuffer<int32_t> indices, edge_ids;
  DeviceBuffer<float> out, ref;
  const float* x = nullptr;
  double cusparse_ms = 0;  // 0: not compared (transposed)

  SpmmArgs Args() const {
    SpmmArgs a;
    a.num_rows = rows;
    a.indptr = indptr.get();
    a.indices = indices.get();
    a.edge_ids = edge_ids.get();
    a.dim = dim;
    a.x = x;
    a.out = const_cast<float*>(out.get());
    return a;
  }
};

// A forward block walked by its destination rows: the gather summing `in` (num_src rows) into
// them, compared with cuSPARSE's A x, or with `scatter` the scatter adding `in` (num_dst rows)
// into the sources, compared with A^T g.
std::unique_ptr<BenchCase> BlockCase(const Block& b, const std::string& family, int64_t dim,
                                     const float* in, bool scatter, cudaStream_t s) {
  auto c = std::make_unique<BenchCase>();
  c->name = b.name + (scatter ? "/scatter" : "") + "/dim" + std::to_string(dim);
  c->family = family;
  c->scatter = scatter;
  c->rows = b.num_dst;
  c->dim = dim;
  c->indptr = DeviceBuffer<int64_t>(b.indptr, s);
  c->indices = DeviceBuffer<int32_t>(b.indices, s);
  const int64_t out_rows = scatter ? b.num_src : b.num_dst;
  c->out = DeviceBuffer<float>(out_rows * dim);
  c->ref = DeviceBuffer<float>(out_rows * dim);
  c->x = in;
  const cusparseOperation_t op =
      scatter ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
  c->cusparse_ms = CusparseSum(b, s).BestMs(op, in, c->ref.get(), dim).first;
  return c;
}

std::unique_ptr<BenchCase> TransposedCase(const Block& b, int64_t dim, const float* grad_out,
                                          cudaStream_t s) {
  auto c = std::make_unique<BenchCase>();
  c->name = b.name + "/transposed/dim" + std::to_string(dim);
  c->family = "transposed";
  c->rows = b.num_src;
  c->dim = dim;
  const DeviceBuffer<int64_t> indptr(b.indptr, s);
  const DeviceBuffer<int32_t> indices(b.indices, s);
  c->indptr = DeviceBuffer<int64_t>(b.num_src + 1);
  c->indices = DeviceBuffer<int32_t>(b.nnz());
  c->edge_ids = DeviceBuffer<int32_t>(b.nnz());
  const auto bytes = cuda::CsrTransposeWorkspaceBytes(b.nnz(), b.num_src);
  REQUIRE(bytes.ok());
  DeviceBuffer<char> workspace(*bytes);
  SKIFF_REQUIRE_OK(cuda::CsrTranspose(b.num_dst, b.num_src, indptr.get(), indices.get(), b.nnz(),
                                      {c->indptr.get(), c->indices.get(), c->edge_ids.get()},
                                      workspace.get(), *bytes, s));
  SKIFF_REQUIRE_CUDA(cudaStreamSynchronize(s));
  c->out = DeviceBuffer<float>(b.num_src * dim);
  c->x = grad_out;
  return c;
}

struct Timed {
  SpmmTuning tuning;
  std::vector<double> ms;  // per case
  double score_all = 0;
};

double GeoMean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(v.size()));
}

class Sweep {
 public:
  Sweep(std::vector<std::unique_ptr<BenchCase>> cases, cudaStream_t s)
      : cases_(std::move(cases)), s_(s) {}

  Timed Run(const SpmmTuning& t) {
    Timed timed{t, {}, 0};
    for (const auto& c : cases_) {
      const SpmmArgs a = c->Args();
      const auto launch = [&] {
        SKIFF_REQUIRE_OK(c->scatter ? cuda::detail::LaunchSpmmScatter(a, s_, t)
                                    : cuda::detail::LaunchSpmmGather(a, s_, t));
      };
      timed.ms.push_back(MedianMs(s_, launch));  // the scatter's sums grow: only timed
      if (c->cusparse_ms > 0 && c->dim == 32) {
        if (c->scatter) {
          c->out.Fill(0, s_);
          launch();
        }
        ExpectClose(c->out.Download(s_), c->ref.Download(s_), 1e-4f, 1e-4f,
                    cuda::detail::DescribeTuning(t) + " vs cuSPARSE on " + c->name);
      }
    }
    if (baseline_.empty()) baseline_ = timed.ms;
    Report(&timed);
    return timed;
  }

 private:
  // Prints the tuning's lines and sets its overall score.
  void Report(Timed* timed) const {
    const std::string name = cuda::detail::DescribeTuning(timed->tuning);
    std::vector<double> all, vs_cusparse_powerlaw;
    std::vector<std::pair<std::string, std::vector<double>>> families = {
        {"powerlaw", {}}, {"uniform", {}}, {"transposed", {}}, {"wide", {}}, {"sampled", {}}};
    for (size_t i = 0; i < cases_.size(); ++i) {
      const BenchCase& c = *cases_[i];
      const double vs_default = baseline_[i] / timed->ms[i];
      const double vs_cusparse = c.cusparse_ms > 0 ? c.cusparse_ms / timed->ms[i] : 0;
      std::printf("tuning %s %s ms=%.4f vs_default=%.3f vs_cusparse=%.3f\n", name.c_str(),
                  c.name.c_str(), timed->ms[i], vs_default, vs_cusparse);
      all.push_back(vs_default);
      for (auto& [family, v] : families) {
        if (family == c.family) v.push_back(vs_default);
      }
      if (c.family == "powerlaw") vs_cusparse_powerlaw.push_back(vs_cusparse);
    }
    timed->score_all = GeoMean(all);
    std::printf("tuning-score %s all=%.3f", name.c_str(), timed->score_all);
    for (const auto& [family, v] : families) std::printf(" %s=%.3f", family.c_str(), GeoMean(v));
    std::printf(" powerlaw_vs_cusparse=%.3f\n", GeoMean(vs_cusparse_powerlaw));
    std::fflush(stdout);
  }

  std::vector<std::unique_ptr<BenchCase>> cases_;
  cudaStream_t s_;
  std::vector<double> baseline_;
};

// The best `n` of `timed` by overall score.
std::vector<SpmmTuning> Best(std::vector<Timed> timed, size_t n) {
  std::sort(timed.begin(), timed.end(),
            [](const Timed& a, const Timed& b) { return a.score_all > b.score_all; });
  std::vector<SpmmTuning> best;
  for (size_t i = 0; i < std::min(n, timed.size()); ++i) best.push_back(timed[i].tuning);
  return best;
}

// The blocks every tuning runs on: forward blocks at dims 32/128/256 (power-law and uniform), the
// all-long block and two sampled blocks the size of a training batch's layers at hidden dim 256;
// for the gather (summing x) also the transposes of the power-law and uniform blocks (the
// backward's gather), for the scatter (adding grad_out into the sources) not.
std::vector<std::unique_ptr<BenchCase>> Cases(bool scatter, const DeviceBuffer<float>& x,
                                              const DeviceBuffer<float>& grad_out, cudaStream_t s) {
  const Block uniform = BenchBlock("uniform-fanout15", 200000, 2000000, 15, false);
  const Block skewed = BenchBlock("powerlaw-mean15", 200000, 2000000, 15, true);
  const Block wide = BenchBlock("uniform-fanout1000", 4000, 2000000, 1000, false);
  const Block batch_top = BenchBlock("sampled-1024x5", 1024, 20000, 5, false);
  const Block batch_mid = BenchBlock("sampled-16000x10", 16000, 200000, 10, false);
  const float* in = scatter ? grad_out.get() : x.get();
  std::vector<std::unique_ptr<BenchCase>> cases;
  for (int64_t dim : {32, 128, 256}) {
    cases.push_back(BlockCase(skewed, "powerlaw", dim, in, scatter, s));
    cases.push_back(BlockCase(uniform, "uniform", dim, in, scatter, s));
  }
  cases.push_back(BlockCase(wide, "wide", 128, in, scatter, s));
  cases.push_back(BlockCase(batch_top, "sampled", 256, in, scatter, s));
  cases.push_back(BlockCase(batch_mid, "sampled", 256, in, scatter, s));
  if (!scatter) {
    cases.push_back(TransposedCase(skewed, 128, grad_out.get(), s));
    cases.push_back(TransposedCase(uniform, 128, grad_out.get(), s));
  }
  return cases;
}

struct SweepSetup {
  int64_t sms = 0;
  TestStream stream;
  DeviceBuffer<float> x, grad_out;
  std::unique_ptr<Sweep> sweep;

  explicit SweepSetup(bool scatter) {
    auto device = cuda::FirstDevice();
    REQUIRE(device.ok());
    sms = device->multiprocessors;
    std::printf("perf device %s sm_%d%d multiprocessors=%lld\n", device->name.c_str(),
                device->sm_major, device->sm_minor, static_cast<long long>(sms));
    const cudaStream_t s = stream.get();
    // One x for every dim (rows are read with the case's own stride), and one grad_out.
    if (!scatter) x = DeviceBuffer<float>(RandomFloats(2000000 * 256, 3), s);
    grad_out = DeviceBuffer<float>(RandomFloats(200000 * 256, 4), s);
    sweep = std::make_unique<Sweep>(Cases(scatter, x, grad_out, s), s);
  }
};

TEST_CASE("perf: gather tuning sweep of one choice at a time" * doctest::skip()) {
  SweepSetup setup(false);
  Sweep& sweep = *setup.sweep;
  const int64_t sms = setup.sms;
  const SpmmTuning defaults;
  sweep.Run(defaults);
  std::vector<Timed> short_stage, long_stage;
  for (int unroll : {4, 8}) {
    for (int min_blocks : {1, 4, 5, 6}) {
      for (int64_t short_blocks : {int64_t{0}, 4 * sms, 16 * sms, 32 * sms}) {
        SpmmTuning t = defaults;
        t.unroll = unroll;
        t.min_blocks = min_blocks;
        t.short_blocks = short_blocks;
        short_stage.push_back(sweep.Run(t));
      }
    }
  }
  for (int64_t edges : {64, 128, 256, 512}) {
    for (int64_t long_blocks : {sms, 2 * sms, int64_t{512}}) {
      for (int64_t slice : {32, 64, 128}) {
        SpmmTuning t = defaults;
        t.long_row_edges = edges;
        t.max_long_blocks = long_blocks;
        t.long_slice_cols = slice;
        long_stage.push_back(sweep.Run(t));
      }
    }
  }
  for (const SpmmTuning& a : Best(short_stage, 3)) {
    for (const SpmmTuning& b : Best(long_stage, 3)) {
      SpmmTuning t = a;
      t.long_row_edges = b.long_row_edges;
      t.max_long_blocks = b.max_long_blocks;
      t.long_slice_cols = b.long_slice_cols;
      sweep.Run(t);
    }
  }
  sweep.Run(defaults);
}

// Around the defaults (unroll 4, 4 blocks per SM, a persistent grid): the grid size, the long-row
// threshold, slice width and long-row blocks, all combined.
TEST_CASE("perf: gather tuning sweep around the defaults" * doctest::skip()) {
  SweepSetup setup(false);
  Sweep& sweep = *setup.sweep;
  const int64_t sms = setup.sms;
  const SpmmTuning defaults;
  sweep.Run(defaults);
  for (int64_t waves : {0, 6, 8, 12, 16, 24, 32, 64}) {
    for (int64_t slice : {64, 128}) {
      for (int64_t edges : {96, 128, 192}) {
        for (int64_t long_blocks : {512, 1024}) {
          SpmmTuning t;
          t.unroll = 4;
          t.min_blocks = 4;
          t.short_blocks = waves * sms;
          t.long_slice_cols = slice;
          t.long_row_edges = edges;
          t.max_long_blocks = long_blocks;
          sweep.Run(t);
        }
      }
    }
  }
  sweep.Run(defaults);
}

// The scatter (the CUDA model's aggregation backward) from its defaults: threshold x slice x
// persistent grid, then the long-row blocks.
TEST_CASE("perf: scatter tuning sweep" * doctest::skip()) {
  SweepSetup setup(true);
  Sweep& sweep = *setup.sweep;
  const int64_t sms = setup.sms;
  const SpmmTuning defaults = cuda::detail::kScatterTuning;
  sweep.Run(defaults);
  for (int64_t edges : {64, 96, 128, 256}) {
    for (int64_t slice : {32, 64, 128}) {
      for (int64_t waves : {0, 16, 32}) {
        SpmmTuning t = defaults;
        t.long_row_edges = edges;
        t.long_slice_cols = slice;
        t.short_blocks = waves * sms;
        sweep.Run(t);
      }
    }
  }
  for (int64_t long_blocks : {2 * sms, int64_t{1024}}) {
    SpmmTuning t = defaults;
    t.max_long_blocks = long_blocks;
    sweep.Run(t);
  }
  sweep.Run(defaults);
}

}  // namespace
}  // namespace skiff::gpu_testing
