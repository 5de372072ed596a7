// LinkDecoder (include/skiff/model/link_decoder.h): gradients of LossAndGrad with respect to the
// embeddings and every decoder parameter against central differences (step 1e-3, the loss summed
// in double; pass when |a - n| <= 5e-4 + 3e-2 max(|a|, |n|), the whole-model tolerance of
// docs/kernels.md) for dot, distmult and mlp under bce and softmax, dot and distmult under gae;
// losses against their formulas over ScorePairs / ScoreCross; argument errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "skiff/model/link_decoder.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;
using namespace skiff::model;

namespace {

constexpr int64_t kDim = 5, kRows = 8;

// Positives with a repeated source (0), a self pair (1, 1) and a repeated destination; negatives
// with a repeat (6) and a row that is also a positive source (0).
const std::vector<int32_t> kPosSrc = {0, 1, 2, 0, 5};
const std::vector<int32_t> kPosDst = {1, 1, 3, 4, 7};
const std::vector<int32_t> kNegDst = {2, 6, 0, 6};

std::unique_ptr<LinkDecoder> MakeDecoder(DecoderKind kind, uint64_t seed = 3) {
  DecoderConfig config;
  config.kind = kind;
  config.dim = kDim;
  config.hidden_dim = 6;
  config.seed = seed;
  auto created = LinkDecoder::Create(config);
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  return std::move(created).value();
}

// Adds U(-0.2, 0.2) to every parameter, so DistMult's relation is not all ones and no MLP unit
// sits on ReLU's kink because of a zero bias.
void JitterParameters(LinkDecoder& decoder, std::mt19937_64& rng) {
  for (const Parameter& p : decoder.Parameters()) {
    const std::vector<float> noise = testing::RandomVector(p.size(), rng, -0.2f, 0.2f);
    for (int64_t i = 0; i < p.size(); ++i) p.data[i] += noise[static_cast<size_t>(i)];
  }
}

double Softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// The smallest |pre-activation| of the MLP's hidden units over the batch's pairs (positives, then
// every source with every negative), in double.
double MinPreActivation(LinkDecoder& decoder, const std::vector<float>& emb) {
  const std::vector<Parameter> p = decoder.Parameters();
  const int64_t hidden = p[1].size();
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (size_t i = 0; i < kPosSrc.size(); ++i) pairs.emplace_back(kPosSrc[i], kPosDst[i]);
  for (int32_t s : kPosSrc) {
    for (int32_t c : kNegDst) pairs.emplace_back(s, c);
  }
  double smallest = INFINITY;
  for (const auto& [s, d] : pairs) {
    for (int64_t u = 0; u < hidden; ++u) {
      double pre = p[1].data[u];
      for (int64_t c = 0; c < kDim; ++c) {
        pre +=
            static_cast<double>(emb[s * kDim + c]) * emb[d * kDim + c] * p[0].data[c * hidden + u];
      }
      smallest = std::min(smallest, std::abs(pre));
    }
  }
  return smallest;
}

const char* KindName(DecoderKind kind) { return NameOf(kDecoderKindNames, kind); }

// Checks the gae loss against Kipf & Welling's formula over ScorePairs of every ordered pair of
// rows (labels: the self pairs and the positives both ways); returns the loss.
double GaeByFormula(LinkDecoder& decoder, const std::vector<float>& emb) {
  std::vector<std::vector<bool>> label(kRows, std::vector<bool>(kRows, false));
  for (int64_t u = 0; u < kRows; ++u) label[u][u] = true;
  for (size_t i = 0; i < kPosSrc.size(); ++i) {
    label[kPosSrc[i]][kPosDst[i]] = true;
    label[kPosDst[i]][kPosSrc[i]] = true;
  }
  std::vector<int32_t> src, dst;
  double positives = 0;
  for (int32_t u = 0; u < kRows; ++u) {
    for (int32_t v = 0; v < kRows; ++v) {
      src.push_back(u);
      dst.push_back(v);
      positives += label[u][v] ? 1 : 0;
    }
  }
  std::vector<float> scores;
  REQUIRE(decoder.ScorePairs(emb.data(), kRows, src, dst, &scores).ok());
  const double cells = kRows * kRows;
  const double pos_weight = (cells - positives) / positives;
  const double norm = cells / (2 * (cells - positives));
  double sum = 0;
  for (size_t c = 0; c < scores.size(); ++c) {
    sum += label[src[c]][dst[c]] ? pos_weight * Softplus(-scores[c]) : Softplus(scores[c]);
  }
  const double want = norm * sum / cells;
  std::vector<float> grad_emb(kRows * kDim);
  const EdgeBatchRows batch{kPosSrc, kPosDst, kNegDst};
  auto gae = decoder.LossAndGrad(emb.data(), kRows, batch, LinkLoss::kGae, grad_emb.data());
  REQUIRE_MESSAGE(gae.ok(), gae.status().ToString());
  CHECK(gae->num_positive == static_cast<int64_t>(positives));
  CHECK(gae->loss == doctest::Approx(want).epsilon(1e-6));
  return gae->loss;
}

}  // namespace

TEST_CASE("link decoder: LossAndGrad gradients match central differences") {
  for (DecoderKind kind : {DecoderKind::kDot, DecoderKind::kDistMult, DecoderKind::kMlp}) {
    for (LinkLoss loss_kind : {LinkLoss::kBce, LinkLoss::kSoftmax, LinkLoss::kGae}) {
      if (!CheckLossFor(kind, loss_kind).ok()) continue;  // gae with mlp
      const std::string what =
          std::string(KindName(kind)) + " / " + NameOf(kLinkLossNames, loss_kind);
      CAPTURE(what);
      // A step of 1e-3 moves an MLP pre-activation by at most ~1.5e-3; draws that put one nearer
      // to ReLU's kink than 3e-3 are skipped, since central differences across a kink are wrong.
      std::unique_ptr<LinkDecoder> decoder;
      std::vector<float> emb;
      uint64_t seed = 7;
      for (;; ++seed) {
        REQUIRE(seed < 107);
        decoder = MakeDecoder(kind);
        std::mt19937_64 rng(seed);
        JitterParameters(*decoder, rng);
        emb = testing::RandomVector(kRows * kDim, rng);
        if (kind != DecoderKind::kMlp || MinPreActivation(*decoder, emb) > 3e-3) break;
      }
      CAPTURE(seed);
      const EdgeBatchRows batch{kPosSrc, kPosDst, kNegDst};

      std::vector<float> grad_emb(kRows * kDim, 123.0f);  // overwritten, not accumulated
      decoder->ZeroGrad();
      auto result = decoder->LossAndGrad(emb.data(), kRows, batch, loss_kind, grad_emb.data());
      REQUIRE_MESSAGE(result.ok(), result.status().ToString());
      // gae: the 8 self pairs and the 4 positives that are not self pairs, both ways.
      CHECK(result->num_positive == (loss_kind == LinkLoss::kGae ? 16 : 5));
      CHECK(result->num_negative == (loss_kind == LinkLoss::kGae ? 48 : 20));
      const std::vector<float> analytic_emb = grad_emb;
      std::vector<std::vector<float>> analytic_params;
      for (const Parameter& p : decoder->Parameters())
        analytic_params.emplace_back(p.grad, p.grad + p.size());

      std::vector<float> scratch(kRows * kDim);
      auto loss = [&]() -> double {
        auto r = decoder->LossAndGrad(emb.data(), kRows, batch, loss_kind, scratch.data());
        REQUIRE(r.ok());
        return r->loss;
      };
      testing::CheckGradient(what + " emb", emb, analytic_emb, loss, 1e-3, 5e-4, 3e-2);
      const std::vector<Parameter> params = decoder->Parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        testing::CheckGradient(what + " " + params[i].name, params[i].data,
                               static_cast<size_t>(params[i].size()), analytic_params[i].data(),
                               loss, 1e-3, 5e-4, 3e-2);
      }
    }
  }
}

TEST_CASE("link decoder: losses follow their formulas over ScorePairs and ScoreCross") {
  for (DecoderKind kind : {DecoderKind::kDot, DecoderKind::kDistMult, DecoderKind::kMlp}) {
    CAPTURE(KindName(kind));
    auto decoder = MakeDecoder(kind);
    std::mt19937_64 rng(8);
    JitterParameters(*decoder, rng);
    const std::vector<float> emb = testing::RandomVector(kRows * kDim, rng, -2.0f, 2.0f);
    std::vector<float> pos, cross;
    REQUIRE(decoder->ScorePairs(emb.data(), kRows, kPosSrc, kPosDst, &pos).ok());
    REQUIRE(decoder->ScoreCross(emb.data(), kRows, kPosSrc, kNegDst, &cross).ok());
    REQUIRE(pos.size() == kPosSrc.size());
    REQUIRE(cross.size() == kPosSrc.size() * kNegDst.size());
    const size_t n = kPosSrc.size(), k = kNegDst.size();

    // ScoreCross is ScorePairs over the materialised pairs.
    std::vector<int32_t> pair_src, pair_dst;
    for (int32_t s : kPosSrc) {
      for (int32_t c : kNegDst) {
        pair_src.push_back(s);
        pair_dst.push_back(c);
      }
    }
    std::vector<float> cross_as_pairs;
    REQUIRE(decoder->ScorePairs(emb.data(), kRows, pair_src, pair_dst, &cross_as_pairs).ok());
    for (size_t i = 0; i < cross.size(); ++i)
      CHECK(cross[i] == doctest::Approx(cross_as_pairs[i]).epsilon(1e-5));

    double bce_pos = 0, bce_neg = 0, softmax = 0;
    for (size_t i = 0; i < n; ++i) {
      bce_pos += Softplus(-pos[i]);
      double sum_exp = std::exp(static_cast<double>(pos[i]));
      for (size_t j = 0; j < k; ++j) {
        bce_neg += Softplus(cross[i * k + j]);
        sum_exp += std::exp(static_cast<double>(cross[i * k + j]));
      }
      softmax += std::log(sum_exp) - pos[i];
    }
    std::vector<float> grad_emb(kRows * kDim);
    const EdgeBatchRows batch{kPosSrc, kPosDst, kNegDst};
    auto bce = decoder->LossAndGrad(emb.data(), kRows, batch, LinkLoss::kBce, grad_emb.data());
    REQUIRE(bce.ok());
    CHECK(bce->loss == doctest::Approx(bce_pos / n + bce_neg / (n * k)).epsilon(1e-6));
    auto sm = decoder->LossAndGrad(emb.data(), kRows, batch, LinkLoss::kSoftmax, grad_emb.data());
    REQUIRE(sm.ok());
    CHECK(sm->loss == doctest::Approx(softmax / n).epsilon(1e-6));
    if (kind != DecoderKind::kMlp) CHECK(GaeByFormula(*decoder, emb) > 0);
  }
}

TEST_CASE("link decoder: parameters, initialisation and gradient accumulation") {
  CHECK(MakeDecoder(DecoderKind::kDot)->Parameters().empty());

  auto distmult = MakeDecoder(DecoderKind::kDistMult);
  const std::vector<Parameter> rel = distmult->Parameters();
  REQUIRE(rel.size() == 1);
  CHECK(rel[0].name == "decoder.relation");
  CHECK(rel[0].shape == std::vector<int64_t>{kDim});
  for (int64_t i = 0; i < kDim; ++i) CHECK(rel[0].data[i] == 1.0f);
  // A fresh DistMult decoder scores as the dot product.
  std::mt19937_64 rng(9);
  const std::vector<float> emb = testing::RandomVector(kRows * kDim, rng);
  std::vector<float> dot_scores, distmult_scores;
  REQUIRE(MakeDecoder(DecoderKind::kDot)
              ->ScorePairs(emb.data(), kRows, kPosSrc, kPosDst, &dot_scores)
              .ok());
  REQUIRE(distmult->ScorePairs(emb.data(), kRows, kPosSrc, kPosDst, &distmult_scores).ok());
  CHECK(dot_scores == distmult_scores);
  for (size_t i = 0; i < kPosSrc.size(); ++i) {
    double want = 0;
    for (int64_t c = 0; c < kDim; ++c)
      want += static_cast<double>(emb[kPosSrc[i] * kDim + c]) * emb[kPosDst[i] * kDim + c];
    CHECK(dot_scores[i] == doctest::Approx(want).epsilon(1e-6));
  }

  auto mlp = MakeDecoder(DecoderKind::kMlp, 5);
  const std::vector<Parameter> params = mlp->Parameters();
  REQUIRE(params.size() == 4);
  CHECK(params[0].name == "decoder.mlp0.weight");
  CHECK(params[0].shape == std::vector<int64_t>{kDim, 6});
  CHECK(params[1].name == "decoder.mlp0.bias");
  CHECK(params[2].name == "decoder.mlp1.weight");
  CHECK(params[2].shape == std::vector<int64_t>{6, 1});
  CHECK(params[3].name == "decoder.mlp1.bias");
  const double limit = std::sqrt(6.0 / (kDim + 6));
  for (int64_t i = 0; i < params[0].size(); ++i) CHECK(std::abs(params[0].data[i]) <= limit);
  CHECK(params[1].data[0] == 0.0f);
  // The same seed gives the same parameters, another seed others.
  auto same_decoder = MakeDecoder(DecoderKind::kMlp, 5);
  auto other_decoder = MakeDecoder(DecoderKind::kMlp, 6);
  const std::vector<Parameter> same = same_decoder->Parameters();
  const std::vector<Parameter> other = other_decoder->Parameters();
  CHECK(std::vector<float>(params[0].data, params[0].data + params[0].size()) ==
        std::vector<float>(same[0].data, same[0].data + same[0].size()));
  CHECK(std::vector<float>(params[0].data, params[0].data + params[0].size()) !=
        std::vector<float>(other[0].data, other[0].data + other[0].size()));

  // Parameter gradients accumulate across calls; grad_emb is overwritten.
  const EdgeBatchRows batch{kPosSrc, kPosDst, kNegDst};
  std::vector<float> grad_once(kRows * kDim), grad_twice(kRows * kDim);
  mlp->ZeroGrad();
  REQUIRE(mlp->LossAndGrad(emb.data(), kRows, batch, LinkLoss::kBce, grad_once.data()).ok());
  const std::vector<float> once(params[0].grad, params[0].grad + params[0].size());
  REQUIRE(mlp->LossAndGrad(emb.data(), kRows, batch, LinkLoss::kBce, grad_twice.data()).ok());
  CHECK(grad_once == grad_twice);
  for (int64_t i = 0; i < params[0].size(); ++i)
    CHECK(params[0].grad[i] == doctest::Approx(2.0 * once[i]).epsilon(1e-6));
  mlp->ZeroGrad();
  for (int64_t i = 0; i < params[0].size(); ++i) CHECK(params[0].grad[i] == 0.0f);
}

TEST_CASE("link decoder: argument errors") {
  DecoderConfig config;
  config.dim = 0;
  CHECK(LinkDecoder::Create(config).status().code() == StatusCode::kInvalidArgument);
  config.dim = 4;
  config.hidden_dim = 0;
  CHECK(LinkDecoder::Create(config).ok());  // hidden_dim is the mlp's only
  config.kind = DecoderKind::kMlp;
  CHECK(LinkDecoder::Create(config).status().code() == StatusCode::kInvalidArgument);
  CHECK(ParseName(kDecoderKindNames, "decoder", "distmult").value() == DecoderKind::kDistMult);
  CHECK(ParseName(kLinkLossNames, "loss", "softmax").value() == LinkLoss::kSoftmax);
  CHECK(ParseName(kLinkLossNames, "loss", "gae").value() == LinkLoss::kGae);
  CHECK(CheckLossFor(DecoderKind::kDistMult, LinkLoss::kGae).ok());
  CHECK(CheckLossFor(DecoderKind::kMlp, LinkLoss::kBce).ok());
  const Status gae_mlp = CheckLossFor(DecoderKind::kMlp, LinkLoss::kGae);
  CHECK(gae_mlp.code() == StatusCode::kInvalidArgument);
  CHECK(gae_mlp.message().find("--decoder dot or distmult") != std::string::npos);
  {
    auto mlp = MakeDecoder(DecoderKind::kMlp);
    std::mt19937_64 mlp_rng(11);
    const std::vector<float> x = testing::RandomVector(kRows * kDim, mlp_rng);
    std::vector<float> grad(kRows * kDim, 5.0f);
    const EdgeBatchRows batch{kPosSrc, kPosDst, kNegDst};
    CHECK(mlp->LossAndGrad(x.data(), kRows, batch, LinkLoss::kGae, grad.data()).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(grad == std::vector<float>(kRows * kDim, 5.0f));  // nothing written
    // Two rows joined by a positive: all four pairs are positive, no negative is left.
    auto dot = MakeDecoder(DecoderKind::kDot);
    const std::vector<int32_t> zero = {0}, one = {1};
    const auto all_positive =
        dot->LossAndGrad(x.data(), 2, {zero, one, one}, LinkLoss::kGae, grad.data());
    CHECK(all_positive.status().code() == StatusCode::kInvalidArgument);
    CHECK(all_positive.status().message().find("no negative pair") != std::string::npos);
    CHECK(grad == std::vector<float>(kRows * kDim, 5.0f));
  }
  // Scratch sizes: gae's R x R scores dominate; a huge R saturates instead of overflowing.
  DecoderConfig dot_config;
  dot_config.dim = 16;
  CHECK(LossScratchBytes(dot_config, LinkLoss::kGae, 2000, 900, 64) >= 2000 * 2000 * 4);
  CHECK(LossScratchBytes(dot_config, LinkLoss::kGae, int64_t{1} << 33, 1, 1) == int64_t{1} << 62);
  CHECK(LossScratchBytes(dot_config, LinkLoss::kBce, 2000, 900, 64) >= 2 * (900 + 900 * 64) * 4);
  dot_config.kind = DecoderKind::kMlp;
  dot_config.hidden_dim = 32;
  CHECK(LossScratchBytes(dot_config, LinkLoss::kBce, 2000, 900, 64) >
        (900 + 900 * 64) * (16 + 32) * 4);

  auto decoder = MakeDecoder(DecoderKind::kDistMult);
  std::mt19937_64 rng(10);
  const std::vector<float> emb = testing::RandomVector(kRows * kDim, rng);
  std::vector<float> scores;
  const std::vector<int32_t> two = {0, 1}, three = {0, 1, 2};
  const std::vector<int32_t> negative = {0, -1}, too_big = {0, kRows};
  auto invalid = [](const Status& st) { return st.code() == StatusCode::kInvalidArgument; };
  CHECK(invalid(decoder->ScorePairs(emb.data(), kRows, two, three, &scores)));
  CHECK(invalid(decoder->ScorePairs(emb.data(), kRows, two, negative, &scores)));
  CHECK(invalid(decoder->ScorePairs(emb.data(), kRows, too_big, two, &scores)));
  CHECK(invalid(decoder->ScoreCross(emb.data(), kRows, two, too_big, &scores)));
  CHECK(invalid(decoder->ScorePairs(nullptr, kRows, two, two, &scores)));
  CHECK(decoder->ScorePairs(emb.data(), kRows, {}, {}, &scores).ok());
  CHECK(scores.empty());

  std::vector<float> grad(kRows * kDim, 7.0f);
  auto loss_status = [&](const EdgeBatchRows& batch, float* g) {
    return decoder->LossAndGrad(emb.data(), kRows, batch, LinkLoss::kBce, g).status();
  };
  CHECK(invalid(loss_status({{}, {}, two}, grad.data())));         // no positives
  CHECK(invalid(loss_status({two, two, {}}, grad.data())));        // k == 0
  CHECK(invalid(loss_status({two, three, two}, grad.data())));     // sizes differ
  CHECK(invalid(loss_status({two, two, too_big}, grad.data())));   // negative out of range
  CHECK(invalid(loss_status({negative, two, two}, grad.data())));  // source out of range
  CHECK(invalid(loss_status({two, two, two}, nullptr)));           // no gradient output
  CHECK(grad == std::vector<float>(kRows * kDim, 7.0f));           // nothing written
  for (const Parameter& p : decoder->Parameters()) CHECK(p.grad[0] == 0.0f);
}
