// Link-score kernels (kernels/cpu/link_score.h): forwards against plain double loops (relative
// 1e-5), backwards against central differences of L = sum(R * out) (step 1e-2, the linear-op
// tolerance of docs/kernels.md), thread-count independence of the scatters, and the losses against
// closed forms, including |s| = 80 where a naive log(sigmoid) under- or overflows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/link_score.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;

namespace {

// Pairs over `rows` rows with repeats: pair 0 is (0, 0), pair 1 repeats pair 0's source, the rest
// are random.
struct Pairs {
  std::vector<int32_t> src, dst;
};
Pairs RandomPairs(int64_t n, int64_t rows, std::mt19937_64& rng) {
  Pairs p;
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(rows - 1));
  for (int64_t i = 0; i < n; ++i) {
    p.src.push_back(i <= 1 ? 0 : pick(rng));
    p.dst.push_back(i == 0 ? 0 : pick(rng));
  }
  return p;
}

double NaiveScore(const std::vector<float>& emb, int64_t dim, int32_t s, int32_t d,
                  const float* rel) {
  double sum = 0;
  for (int64_t c = 0; c < dim; ++c)
    sum += static_cast<double>(emb[s * dim + c]) * (rel ? rel[c] : 1.0f) * emb[d * dim + c];
  return sum;
}

void CheckClose(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK_MESSAGE(std::abs(got[i] - want[i]) <= 1e-5 * std::max(1.0, std::abs(want[i])),
                  what << "[" << i << "]: " << got[i] << " vs " << want[i]);
  }
}

const int64_t kDims[] = {1, 3, 5, 37, 70, 130};

}  // namespace

TEST_CASE("kernels: PairScores and CrossScores match plain loops, with and without a relation") {
  std::mt19937_64 rng(1);
  const int64_t rows = 9;
  for (int64_t dim : kDims) {
    CAPTURE(dim);
    const auto emb = testing::RandomVector(rows * dim, rng);
    const auto rel = testing::RandomVector(dim, rng, 0.5f, 1.5f);
    for (const float* r : {static_cast<const float*>(nullptr), rel.data()}) {
      for (int64_t n : {0, 1, 2, 23}) {
        const Pairs p = RandomPairs(n, rows, rng);
        std::vector<float> scores(n, -7.0f);
        cpu::PairScores(emb.data(), dim, p.src.data(), p.dst.data(), n, r, scores.data());
        std::vector<double> want(n);
        for (int64_t i = 0; i < n; ++i) want[i] = NaiveScore(emb, dim, p.src[i], p.dst[i], r);
        CheckClose(scores, want, "PairScores");

        for (int64_t k : {0, 1, 4, 11}) {
          const Pairs c = RandomPairs(k, rows, rng);  // c.dst: candidates, with repeats
          std::vector<float> cross(n * k, -7.0f);
          cpu::CrossScores(emb.data(), dim, p.src.data(), n, c.dst.data(), k, r, cross.data());
          std::vector<double> cross_want(n * k);
          for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < k; ++j)
              cross_want[i * k + j] = NaiveScore(emb, dim, p.src[i], c.dst[j], r);
          }
          CheckClose(cross, cross_want, "CrossScores");
        }
      }
    }
  }
}

TEST_CASE("kernels: CrossPairScores scores each pair as PairScores does, wherever it stands") {
  std::mt19937_64 rng(4);
  const int64_t rows = 40;
  for (int64_t dim : kDims) {
    CAPTURE(dim);
    const auto emb = testing::RandomVector(rows * dim, rng);
    const auto rel = testing::RandomVector(dim, rng, 0.5f, 1.5f);
    for (const float* r : {static_cast<const float*>(nullptr), rel.data()}) {
      const Pairs p = RandomPairs(3, rows, rng);
      // Candidates 0 .. 36, and row 5 again at the end: the same score as its first place.
      std::vector<int32_t> cand(37);
      for (int32_t j = 0; j < 37; ++j) cand[static_cast<size_t>(j)] = j;
      cand.push_back(5);
      const auto k = static_cast<int64_t>(cand.size());
      std::vector<float> cross(static_cast<size_t>(3 * k), -7.0f);
      cpu::CrossPairScores(emb.data(), dim, p.src.data(), 3, cand.data(), k, r, cross.data());
      for (int64_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        std::vector<int32_t> src(static_cast<size_t>(k), p.src[static_cast<size_t>(i)]);
        std::vector<float> pairs(static_cast<size_t>(k));
        cpu::PairScores(emb.data(), dim, src.data(), cand.data(), k, r, pairs.data());
        CHECK(std::equal(pairs.begin(), pairs.end(), cross.begin() + i * k));  // bitwise
        CHECK(cross[static_cast<size_t>(i * k + 5)] == cross[static_cast<size_t>(i * k + k - 1)]);
        // One candidate alone, in a call of its own: the same bits.
        float alone = 0;
        cpu::CrossPairScores(emb.data(), dim, &p.src[static_cast<size_t>(i)], 1, &cand[7], 1, r,
                             &alone);
        CHECK(alone == cross[static_cast<size_t>(i * k + 7)]);
      }
    }
  }
}

TEST_CASE("kernels: PairHadamard matches a plain loop") {
  std::mt19937_64 rng(2);
  const int64_t rows = 6, n = 14;
  for (int64_t dim : kDims) {
    const auto emb = testing::RandomVector(rows * dim, rng);
    const Pairs p = RandomPairs(n, rows, rng);
    std::vector<float> out(n * dim);
    cpu::PairHadamard(emb.data(), dim, p.src.data(), p.dst.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < dim; ++c)
        CHECK(out[i * dim + c] == emb[p.src[i] * dim + c] * emb[p.dst[i] * dim + c]);
    }
  }
}

TEST_CASE("kernels: link-score backwards match finite differences and accumulate") {
  std::mt19937_64 rng(3);
  const int64_t rows = 7, n = 12, k = 5;
  for (int64_t dim : {1, 3, 7, 70}) {
    CAPTURE(dim);
    auto emb = testing::RandomVector(rows * dim, rng);
    auto rel = testing::RandomVector(dim, rng, 0.5f, 1.5f);
    const Pairs p = RandomPairs(n, rows, rng);
    const Pairs c = RandomPairs(k, rows, rng);
    const auto weight_pairs = testing::RandomVector(n, rng);
    const auto weight_cross = testing::RandomVector(n * k, rng);
    const auto weight_hadamard = testing::RandomVector(n * dim, rng);
    // Gradients start from a non-zero value: the backwards accumulate.
    const auto start_emb = testing::RandomVector(rows * dim, rng);
    const auto start_rel = testing::RandomVector(dim, rng);
    auto minus_start = [](std::vector<float> g, const std::vector<float>& start) {
      for (size_t i = 0; i < g.size(); ++i) g[i] -= start[i];
      return g;
    };

    for (bool use_rel : {false, true}) {
      CAPTURE(use_rel);
      const float* r = use_rel ? rel.data() : nullptr;
      std::vector<float> scores(n), cross(n * k);
      auto pair_loss = [&] {
        cpu::PairScores(emb.data(), dim, p.src.data(), p.dst.data(), n, r, scores.data());
        return testing::Dot(scores, weight_pairs);
      };
      auto cross_loss = [&] {
        cpu::CrossScores(emb.data(), dim, p.src.data(), n, c.dst.data(), k, r, cross.data());
        return testing::Dot(cross, weight_cross);
      };
      std::vector<float> grad_emb = start_emb, grad_rel = start_rel;
      cpu::PairScoresBackward(emb.data(), dim, p.src.data(), p.dst.data(), n, r,
                              weight_pairs.data(), grad_emb.data(), grad_rel.data());
      testing::CheckGradient("PairScores emb", emb, minus_start(grad_emb, start_emb), pair_loss);
      if (use_rel) {
        testing::CheckGradient("PairScores rel", rel, minus_start(grad_rel, start_rel), pair_loss);
      } else {
        CHECK(grad_rel == start_rel);  // untouched without a relation
      }

      grad_emb = start_emb;
      grad_rel = start_rel;
      cpu::CrossScoresBackward(emb.data(), dim, p.src.data(), n, c.dst.data(), k, r,
                               weight_cross.data(), grad_emb.data(), grad_rel.data());
      testing::CheckGradient("CrossScores emb", emb, minus_start(grad_emb, start_emb), cross_loss);
      if (use_rel) {
        testing::CheckGradient("CrossScores rel", rel, minus_start(grad_rel, start_rel),
                               cross_loss);
      } else {
        CHECK(grad_rel == start_rel);
      }
    }

    std::vector<float> out(n * dim);
    auto hadamard_loss = [&] {
      cpu::PairHadamard(emb.data(), dim, p.src.data(), p.dst.data(), n, out.data());
      return testing::Dot(out, weight_hadamard);
    };
    std::vector<float> grad_emb = start_emb;
    cpu::PairHadamardBackward(emb.data(), dim, p.src.data(), p.dst.data(), n,
                              weight_hadamard.data(), grad_emb.data());
    testing::CheckGradient("PairHadamard emb", emb, minus_start(grad_emb, start_emb),
                           hadamard_loss);
  }
}

TEST_CASE("kernels: link-score scatters give the same bits for any thread count") {
  std::mt19937_64 rng(4);
  const int64_t rows = 50, n = 3000, dim = 130;
  const auto emb = testing::RandomVector(rows * dim, rng);
  const auto rel = testing::RandomVector(dim, rng);
  const Pairs p = RandomPairs(n, rows, rng);
  const auto grad_scores = testing::RandomVector(n, rng);
  const auto grad_out = testing::RandomVector(n * dim, rng);
  auto run = [&](int threads) {
    cpu::SetNumThreads(threads);
    std::vector<float> scores(n), grad_emb(rows * dim, 0.0f), grad_rel(dim, 0.0f);
    cpu::PairScores(emb.data(), dim, p.src.data(), p.dst.data(), n, rel.data(), scores.data());
    cpu::PairScoresBackward(emb.data(), dim, p.src.data(), p.dst.data(), n, rel.data(),
                            grad_scores.data(), grad_emb.data(), grad_rel.data());
    cpu::PairHadamardBackward(emb.data(), dim, p.src.data(), p.dst.data(), n, grad_out.data(),
                              grad_emb.data());
    std::vector<float> all = scores;
    all.insert(all.end(), grad_emb.begin(), grad_emb.end());
    all.insert(all.end(), grad_rel.begin(), grad_rel.end());
    return all;
  };
  const int saved = cpu::NumThreads();
  const std::vector<float> one = run(1);
  const std::vector<float> four = run(4);
  cpu::SetNumThreads(saved);
  CHECK(one == four);
}

TEST_CASE("kernels: BceWithLogits against closed forms, stable at |s| = 80") {
  const std::vector<float> s = {0.0f, 2.0f, -3.0f, 80.0f, -80.0f};
  std::vector<float> grad(s.size());
  const double sum_pos = cpu::BceWithLogits(s.data(), 5, 1.0f, 0.5f, grad.data());
  auto softplus = [](double x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  };
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  double want = 0;
  for (float x : s) want += softplus(-x);  // -log sigmoid(s)
  CHECK(sum_pos == doctest::Approx(want).epsilon(1e-12));
  CHECK(std::isfinite(sum_pos));
  CHECK(want == doctest::Approx(std::log(2.0) + softplus(-2.0) + softplus(3.0) + 80.0));
  for (size_t i = 0; i < s.size(); ++i)
    CHECK(grad[i] == doctest::Approx(0.5 * (sigmoid(s[i]) - 1.0)).epsilon(1e-6));
  CHECK(grad[4] == doctest::Approx(-0.5));
  CHECK(grad[3] <= 0.0f);
  CHECK(grad[3] > -1e-30f);

  const double sum_neg = cpu::BceWithLogits(s.data(), 5, 0.0f, 1.0f, grad.data());
  double want_neg = 0;
  for (float x : s) want_neg += softplus(x);  // -log(1 - sigmoid(s))
  CHECK(sum_neg == doctest::Approx(want_neg).epsilon(1e-12));
  for (size_t i = 0; i < s.size(); ++i)
    CHECK(grad[i] == doctest::Approx(sigmoid(s[i])).epsilon(1e-6));
  CHECK(cpu::BceWithLogits(s.data(), 0, 1.0f, 1.0f, nullptr) == 0.0);
  CHECK(cpu::BceWithLogits(s.data(), 5, 0.0f, 1.0f, nullptr) == sum_neg);  // grad may be null

  // The gradient is the derivative of scale * loss.
  std::mt19937_64 rng(5);
  auto z = testing::RandomVector(17, rng, -4.0f, 4.0f);
  std::vector<float> g(17);
  cpu::BceWithLogits(z.data(), 17, 1.0f, 0.25f, g.data());
  testing::CheckGradient(
      "BceWithLogits", z, g,
      [&] { return 0.25 * cpu::BceWithLogits(z.data(), 17, 1.0f, 1.0f, nullptr); }, 1e-2, 1e-5,
      1e-3);
}

TEST_CASE("kernels: SoftmaxNegatives against closed forms, stable at |s| = 80") {
  // Row 0: [1 | 2, 0.5]; row 1: [80 | -80, -80]; row 2: [-80 | 80, 0].
  const std::vector<float> pos = {1.0f, 80.0f, -80.0f};
  const std::vector<float> neg = {2.0f, 0.5f, -80.0f, -80.0f, 80.0f, 0.0f};
  std::vector<float> grad_pos(3), grad_neg(6);
  const double sum =
      cpu::SoftmaxNegatives(pos.data(), neg.data(), 3, 2, 0.5f, grad_pos.data(), grad_neg.data());
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  const double loss1 = std::log1p(2.0 * std::exp(-160.0));
  const double loss2 = 160.0 + std::log1p(std::exp(-80.0) + std::exp(-160.0));
  CHECK(sum == doctest::Approx(lse0 - 1.0 + loss1 + loss2).epsilon(1e-12));
  CHECK(grad_pos[0] == doctest::Approx(0.5 * (std::exp(1.0 - lse0) - 1.0)).epsilon(1e-6));
  CHECK(grad_neg[0] == doctest::Approx(0.5 * std::exp(2.0 - lse0)).epsilon(1e-6));
  CHECK(grad_neg[1] == doctest::Approx(0.5 * std::exp(0.5 - lse0)).epsilon(1e-6));
  CHECK(grad_pos[1] == doctest::Approx(0.0));
  CHECK(grad_pos[2] == doctest::Approx(-0.5));
  CHECK(grad_neg[4] == doctest::Approx(0.5));
  for (float g : grad_neg) CHECK(std::isfinite(g));

  // k == 0: every row is just its positive, with loss 0.
  CHECK(cpu::SoftmaxNegatives(pos.data(), nullptr, 3, 0, 1.0f, grad_pos.data(), nullptr) == 0.0);
  CHECK(grad_pos == std::vector<float>{0.0f, 0.0f, 0.0f});

  std::mt19937_64 rng(6);
  const int64_t n = 4, k = 6;
  auto p = testing::RandomVector(n, rng, -3.0f, 3.0f);
  auto q = testing::RandomVector(n * k, rng, -3.0f, 3.0f);
  std::vector<float> gp(n), gq(n * k);
  cpu::SoftmaxNegatives(p.data(), q.data(), n, k, 0.25f, gp.data(), gq.data());
  auto loss = [&] {
    return 0.25 * cpu::SoftmaxNegatives(p.data(), q.data(), n, k, 1.0f, nullptr, nullptr);
  };
  testing::CheckGradient("SoftmaxNegatives pos", p, gp, loss, 1e-2, 1e-5, 1e-3);
  testing::CheckGradient("SoftmaxNegatives neg", q, gq, loss, 1e-2, 1e-5, 1e-3);
}
