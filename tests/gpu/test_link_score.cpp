// Link-score kernels (kernels/cuda/link_score.cuh) against their CPU references
// (kernels/cpu/link_score.h), over pairs with many repeated rows (50 rows, up to 5000 pairs, and a
// pair (0, 0)), n = 0, k = 0 and widths around the warp size.
//
// Tolerances, relative to the same computation over absolute values (which bounds the rounding
// error of any summation order): scores 1e-5 (float warp sums and fp32 cuBLAS against the CPU's
// double or OpenBLAS sums); backward scatters and grad_rel 1e-4 (atomicAdd order varies; a row
// receives up to ~200 terms in float). Losses: the loss sum within 2e-5 * (sum + count) (per-item
// expf/logf in float, a row's log-sum-exp of ~80 carries ~1e-5 absolute error), gradients rtol
// 2e-5 with atol 1e-7 (sigmoid(s) - 1 cancels in float).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/link_score.h"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/link_score.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

constexpr int64_t kRows = 50;

struct Pairs {
  std::vector<int32_t> src, dst;
};
// n pairs over kRows rows (so rows repeat); pair 0 is (0, 0).
Pairs RandomPairs(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, kRows - 1);
  Pairs p;
  for (int64_t i = 0; i < n; ++i) {
    p.src.push_back(i == 0 ? 0 : pick(rng));
    p.dst.push_back(i == 0 ? 0 : pick(rng));
  }
  return p;
}

const std::vector<int64_t>& Dims() {
  static const std::vector<int64_t> dims = {1, 3, 32, 33, 100, 128, 257};
  return dims;
}

TEST_CASE("PairScores, PairHadamard and their backwards match the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (int64_t dim : Dims()) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{37}, int64_t{5000}}) {
      for (bool use_rel : {false, true}) {
        const std::string what = "dim=" + std::to_string(dim) + " n=" + std::to_string(n) +
                                 (use_rel ? " distmult" : " dot");
        CAPTURE(what);
        const std::vector<float> emb = RandomFloats(kRows * dim, 1);
        const std::vector<float> rel = RandomFloats(dim, 2, 0.5f, 1.5f);
        const std::vector<float> grad_scores = RandomFloats(n, 3);
        const std::vector<float> grad_out = RandomFloats(n * dim, 4);
        const std::vector<float> grad_emb0 = RandomFloats(kRows * dim, 5);
        const std::vector<float> grad_rel0 = RandomFloats(dim, 6);
        const Pairs p = RandomPairs(n, 7 + n);
        const float* rel_cpu = use_rel ? rel.data() : nullptr;
        const std::vector<float> abs_emb = Abs(emb), abs_rel = Abs(rel);
        const float* abs_rel_cpu = use_rel ? abs_rel.data() : nullptr;

        DeviceBuffer<float> demb(emb, s), drel(rel, s), dgs(grad_scores, s), dgo(grad_out, s);
        DeviceBuffer<int32_t> dsrc(p.src, s), ddst(p.dst, s);
        const float* rel_gpu = use_rel ? drel.get() : nullptr;

        std::vector<float> scores(n), mag(n);
        cpu::PairScores(emb.data(), dim, p.src.data(), p.dst.data(), n, rel_cpu, scores.data());
        cpu::PairScores(abs_emb.data(), dim, p.src.data(), p.dst.data(), n, abs_rel_cpu,
                        mag.data());
        DeviceBuffer<float> dscores(n);
        SKIFF_REQUIRE_OK(cuda::PairScores(demb.get(), dim, dsrc.get(), ddst.get(), n, rel_gpu,
                                          dscores.get(), s));
        ExpectClose(dscores.Download(s), scores, 1e-5f, 1e-7f, "PairScores", &mag);

        std::vector<float> grad_emb = grad_emb0, grad_rel = grad_rel0;
        std::vector<float> mag_emb = Abs(grad_emb0), mag_rel = Abs(grad_rel0);
        cpu::PairScoresBackward(emb.data(), dim, p.src.data(), p.dst.data(), n, rel_cpu,
                                grad_scores.data(), grad_emb.data(), grad_rel.data());
        cpu::PairScoresBackward(abs_emb.data(), dim, p.src.data(), p.dst.data(), n, abs_rel_cpu,
                                Abs(grad_scores).data(), mag_emb.data(), mag_rel.data());
        DeviceBuffer<float> dgrad_emb(grad_emb0, s), dgrad_rel(grad_rel0, s);
        SKIFF_REQUIRE_OK(cuda::PairScoresBackward(demb.get(), dim, dsrc.get(), ddst.get(), n,
                                                  rel_gpu, dgs.get(), dgrad_emb.get(),
                                                  dgrad_rel.get(), s));
        ExpectClose(dgrad_emb.Download(s), grad_emb, 1e-4f, 1e-6f, "PairScoresBackward emb",
                    &mag_emb);
        ExpectClose(dgrad_rel.Download(s), grad_rel, 1e-4f, 1e-6f, "PairScoresBackward rel",
                    &mag_rel);

        if (use_rel) continue;  // the Hadamard ops take no relation
        std::vector<float> had(n * dim);
        cpu::PairHadamard(emb.data(), dim, p.src.data(), p.dst.data(), n, had.data());
        DeviceBuffer<float> dhad(n * dim);
        SKIFF_REQUIRE_OK(
            cuda::PairHadamard(demb.get(), dim, dsrc.get(), ddst.get(), n, dhad.get(), s));
        ExpectClose(dhad.Download(s), had, 0, 0, "PairHadamard");

        grad_emb = grad_emb0;
        mag_emb = Abs(grad_emb0);
        cpu::PairHadamardBackward(emb.data(), dim, p.src.data(), p.dst.data(), n, grad_out.data(),
                                  grad_emb.data());
        cpu::PairHadamardBackward(abs_emb.data(), dim, p.src.data(), p.dst.data(), n,
                                  Abs(grad_out).data(), mag_emb.data());
        dgrad_emb.Upload(grad_emb0, s);
        SKIFF_REQUIRE_OK(cuda::PairHadamardBackward(demb.get(), dim, dsrc.get(), ddst.get(), n,
                                                    dgo.get(), dgrad_emb.get(), s));
        ExpectClose(dgrad_emb.Download(s), grad_emb, 1e-4f, 1e-6f, "PairHadamardBackward",
                    &mag_emb);
      }
    }
  }
}

TEST_CASE("CrossScores and CrossScoresBackward (fp32) match the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  auto handle = cuda::CublasHandle::Create();
  REQUIRE_MESSAGE(handle.ok(), handle.status().ToString());
  for (int64_t dim : Dims()) {
    for (const auto& [n, k] :
         std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {4, 0}, {1, 1}, {37, 33}, {1000, 300}}) {
      for (bool use_rel : {false, true}) {
        const std::string what = "dim=" + std::to_string(dim) + " n=" + std::to_string(n) +
                                 " k=" + std::to_string(k) + (use_rel ? " distmult" : " dot");
        CAPTURE(what);
        const std::vector<float> emb = RandomFloats(kRows * dim, 11);
        const std::vector<float> rel = RandomFloats(dim, 12, 0.5f, 1.5f);
        const std::vector<float> grad_scores = RandomFloats(n * k, 13);
        const std::vector<float> grad_emb0 = RandomFloats(kRows * dim, 14);
        const std::vector<float> grad_rel0 = RandomFloats(dim, 15);
        const Pairs p = RandomPairs(n, 16 + n);
        const Pairs c = RandomPairs(k, 17 + k);  // candidates: c.dst, with repeats
        const float* rel_cpu = use_rel ? rel.data() : nullptr;
        const std::vector<float> abs_emb = Abs(emb), abs_rel = Abs(rel);
        const float* abs_rel_cpu = use_rel ? abs_rel.data() : nullptr;

        DeviceBuffer<float> demb(emb, s), drel(rel, s), dgs(grad_scores, s);
        DeviceBuffer<int32_t> dsrc(p.src, s), dcand(c.dst, s);
        const float* rel_gpu = use_rel ? drel.get() : nullptr;
        auto bytes = cuda::CrossScoresWorkspaceBytes(dim, n, k);
        REQUIRE(bytes.ok());
        DeviceBuffer<unsigned char> workspace(*bytes);

        std::vector<float> scores(n * k), mag(n * k);
        cpu::CrossScores(emb.data(), dim, p.src.data(), n, c.dst.data(), k, rel_cpu, scores.data());
        cpu::CrossScores(abs_emb.data(), dim, p.src.data(), n, c.dst.data(), k, abs_rel_cpu,
                         mag.data());
        DeviceBuffer<float> dscores(n * k);
        SKIFF_REQUIRE_OK(cuda::CrossScores(demb.get(), dim, dsrc.get(), n, dcand.get(), k, rel_gpu,
                                           dscores.get(), workspace.get(), *bytes, *handle,
                                           cuda::GemmPrecision::kFp32, s));
        ExpectClose(dscores.Download(s), scores, 1e-5f, 1e-7f, "CrossScores", &mag);

        std::vector<float> grad_emb = grad_emb0, grad_rel = grad_rel0;
        std::vector<float> mag_emb = Abs(grad_emb0), mag_rel = Abs(grad_rel0);
        cpu::CrossScoresBackward(emb.data(), dim, p.src.data(), n, c.dst.data(), k, rel_cpu,
                                 grad_scores.data(), grad_emb.data(), grad_rel.data());
        cpu::CrossScoresBackward(abs_emb.data(), dim, p.src.data(), n, c.dst.data(), k, abs_rel_cpu,
                                 Abs(grad_scores).data(), mag_emb.data(), mag_rel.data());
        DeviceBuffer<float> dgrad_emb(grad_emb0, s), dgrad_rel(grad_rel0, s);
        SKIFF_REQUIRE_OK(cuda::CrossScoresBackward(
            demb.get(), dim, dsrc.get(), n, dcand.get(), k, rel_gpu, dgs.get(), dgrad_emb.get(),
            dgrad_rel.get(), workspace.get(), *bytes, *handle, cuda::GemmPrecision::kFp32, s));
        ExpectClose(dgrad_emb.Download(s), grad_emb, 1e-4f, 1e-6f, "CrossScoresBackward emb",
                    &mag_emb);
        ExpectClose(dgrad_rel.Download(s), grad_rel, 1e-4f, 1e-6f, "CrossScoresBackward rel",
                    &mag_rel);
      }
    }
  }
}

// Scores in [-10, 10] with every 7th at +80 and every 7th (offset) at -80.
std::vector<float> LossScores(int64_t n, uint64_t seed) {
  std::vector<float> v = RandomFloats(n, seed, -10.0f, 10.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (i % 7 == 3) v[i] = 80.0f;
    if (i % 7 == 5) v[i] = -80.0f;
  }
  return v;
}

void CheckLossSum(double gpu, double cpu_sum, int64_t count, const std::string& what) {
  const double tol = 2e-5 * (std::fabs(cpu_sum) + static_cast<double>(count));
  CHECK_MESSAGE(std::fabs(gpu - cpu_sum) <= tol,
                what << ": gpu " << gpu << " vs cpu " << cpu_sum << " (tolerance " << tol << ")");
}

TEST_CASE("BceWithLogits and SoftmaxNegatives match the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  DeviceBuffer<double> dloss(1);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{100000}}) {
    CAPTURE(n);
    const std::vector<float> scores = LossScores(n, 21);
    DeviceBuffer<float> dscores(scores, s), dgrad(n);
    for (float target : {0.0f, 1.0f}) {
      CAPTURE(target);
      std::vector<float> grad(n);
      const double sum = cpu::BceWithLogits(scores.data(), n, target, 0.5f, grad.data());
      SKIFF_REQUIRE_OK(
          cuda::BceWithLogits(dscores.get(), n, target, 0.5f, dgrad.get(), dloss.get(), s));
      CheckLossSum(dloss.Download(s)[0], sum, n, "BceWithLogits loss");
      ExpectClose(dgrad.Download(s), grad, 2e-5f, 1e-7f, "BceWithLogits grad");
      // Without a gradient, the loss alone.
      SKIFF_REQUIRE_OK(
          cuda::BceWithLogits(dscores.get(), n, target, 0.5f, nullptr, dloss.get(), s));
      CheckLossSum(dloss.Download(s)[0], sum, n, "BceWithLogits loss without grad");
    }
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{100}}) {
      if (n * k > 1000000) continue;
      CAPTURE(k);
      const std::vector<float> neg = LossScores(n * k, 22 + k);
      std::vector<float> grad_pos(n), grad_neg(n * k);
      const double sum = cpu::SoftmaxNegatives(scores.data(), neg.data(), n, k, 0.25f,
                                               grad_pos.data(), grad_neg.data());
      DeviceBuffer<float> dneg(neg, s), dgrad_neg(n * k);
      SKIFF_REQUIRE_OK(cuda::SoftmaxNegatives(dscores.get(), dneg.get(), n, k, 0.25f, dgrad.get(),
                                              dgrad_neg.get(), dloss.get(), s));
      CheckLossSum(dloss.Download(s)[0], sum, n * (k + 1), "SoftmaxNegatives loss");
      ExpectClose(dgrad.Download(s), grad_pos, 2e-5f, 1e-7f, "SoftmaxNegatives grad_pos");
      ExpectClose(dgrad_neg.Download(s), grad_neg, 2e-5f, 1e-7f, "SoftmaxNegatives grad_neg");
    }
  }
}

void ExpectInvalid(const Status& st, const char* needle) {
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(st.message().find(needle) != std::string::npos, st.ToString());
}

TEST_CASE("host: link-score entry points refuse bad arguments before touching the device") {
  ExpectInvalid(cuda::PairScores(nullptr, -1, nullptr, nullptr, 3, nullptr, nullptr, nullptr),
                "negative size");
  ExpectInvalid(cuda::PairScores(nullptr, 4, nullptr, nullptr, 3, nullptr, nullptr, nullptr),
                "null");
  ExpectInvalid(cuda::PairScoresBackward(nullptr, 4, nullptr, nullptr, -2, nullptr, nullptr,
                                         nullptr, nullptr, nullptr),
                "negative size");
  ExpectInvalid(cuda::PairHadamard(nullptr, 4, nullptr, nullptr, 2, nullptr, nullptr), "null");
  ExpectInvalid(
      cuda::PairHadamardBackward(nullptr, -4, nullptr, nullptr, 2, nullptr, nullptr, nullptr),
      "negative size");
  CHECK_FALSE(cuda::CrossScoresWorkspaceBytes(8, -1, 3).ok());
  const auto bytes = cuda::CrossScoresWorkspaceBytes(8, 3, 2);
  REQUIRE(bytes.ok());
  CHECK(*bytes >= 2 * (3 + 2) * 8 * sizeof(float));
  const cuda::CublasHandle no_handle;  // never used: the calls are refused first
  ExpectInvalid(cuda::CrossScores(nullptr, 8, nullptr, 3, nullptr, 2, nullptr, nullptr, nullptr,
                                  *bytes - 1, no_handle, cuda::GemmPrecision::kFp32, nullptr),
                "workspace");
  ExpectInvalid(cuda::CrossScoresBackward(nullptr, 8, nullptr, 3, nullptr, -2, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, 0, no_handle,
                                          cuda::GemmPrecision::kFp32, nullptr),
                "negative size");
  ExpectInvalid(cuda::BceWithLogits(nullptr, 3, 1.0f, 1.0f, nullptr, nullptr, nullptr),
                "loss_sum is null");
  ExpectInvalid(
      cuda::SoftmaxNegatives(nullptr, nullptr, 3, -1, 1.0f, nullptr, nullptr, nullptr, nullptr),
      "negative size");
}

}  // namespace
}  // namespace skiff::gpu_testing
