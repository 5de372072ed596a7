// Link-prediction decoders: score node pairs from the rows of an embedding matrix (an encoder's
// output for a batch's nodes, rows x dim, row-major float32) and compute a batch's loss and its
// gradients, on the CPU (kernels/cpu/link_score.h).
//
//   dot:      s(u, v) = <x_u, x_v>                                     (no parameters)
//   distmult: s(u, v) = sum_k x_u[k] r[k] x_v[k]                       ("decoder.relation", dim;
//                                                                       starts at 1, i.e. dot)
//   mlp:      s(u, v) = Linear(hidden, 1)(ReLU(Linear(dim, hidden)(x_u * x_v)))
//             ("decoder.mlp0.weight" dim x hidden, "decoder.mlp0.bias" hidden,
//              "decoder.mlp1.weight" hidden x 1, "decoder.mlp1.bias" 1; y = x W + b as the
//              encoders' layers; weights Glorot-uniform from config.seed as the encoders, biases 0)
//
// A training batch (EdgeBatchRows) holds n positive pairs and k negative destinations shared by
// all positives: positive i is scored against (pos_src[i], neg_dst[j]) for every j, n x k
// negatives. dot and distmult score the negatives as one GEMM (cpu::CrossScores); mlp evaluates
// them as n x k explicit pairs, so its scratch holds (n + n k) x (dim + 2 hidden) floats.
//
// Losses (LinkLoss), as means over the batch:
//   bce:     mean_i softplus(-s_i+) + mean_{i,j} softplus(s_ij-) (PyG GAE's recon_loss with the
//            negatives given);
//   softmax: mean_i [logsumexp(s_i+, s_i0-, ..., s_i(k-1)-) - s_i+] (sampled softmax);
//   gae:     Kipf & Welling's GAE loss over every ordered pair (u, v) of the batch's R rows, self
//            pairs included: y_uv = 1 for u == v and for a positive in either direction (every
//            decoder here is symmetric), else 0; with P such pairs, w = (R^2 - P) / P and
//            norm = R^2 / (2 (R^2 - P)), loss = norm * mean_uv [w y softplus(-s) +
//            (1 - y) softplus(s)]. The shared negatives only bring their nodes into the batch.
//            Quadratic in R: dot and distmult only (one R x R GEMM); mlp is InvalidArgument.
//            With one batch of every training edge and every node among the rows, this is the
//            whole-adjacency loss of GAE's reference code.
//
// Thread safety: one thread at a time for LossAndGrad, ZeroGrad and parameter updates. ScorePairs
// and ScoreCross only read the parameters and use their own scratch, so several threads may call
// them at once while nothing updates the decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/enum_names.h"
#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::model {

enum class DecoderKind { kDot, kDistMult, kMlp };
inline constexpr EnumName<DecoderKind> kDecoderKindNames[] = {
    {DecoderKind::kDot, "dot"}, {DecoderKind::kDistMult, "distmult"}, {DecoderKind::kMlp, "mlp"}};
enum class LinkLoss { kBce, kSoftmax, kGae };
inline constexpr EnumName<LinkLoss> kLinkLossNames[] = {
    {LinkLoss::kBce, "bce"}, {LinkLoss::kSoftmax, "softmax"}, {LinkLoss::kGae, "gae"}};

struct DecoderConfig {
  DecoderKind kind = DecoderKind::kDot;
  int64_t dim = 0;  // embedding width (the encoder's output width)
  int64_t hidden_dim =
      256;            // mlp only: x_s*x_d -> Linear(dim, hidden) -> ReLU -> Linear(hidden, 1)
  uint64_t seed = 0;  // parameter init (Glorot uniform like the encoders; DistMult's relation
                      // vector starts at 1)
};

// One batch of edges over the rows of an embedding matrix: positives (pos_src[i], pos_dst[i]) and
// k shared negative destinations: every positive's source is paired with every neg_dst[j] (n x k
// negatives). The spans are referenced for the call only.
struct EdgeBatchRows {
  std::span<const int32_t> pos_src, pos_dst, neg_dst;
};

struct LinkLossResult {
  double loss = 0;           // mean loss of the batch (see LinkLoss above)
  int64_t num_positive = 0;  // n (gae: P)
  int64_t num_negative = 0;  // n * k (gae: R^2 - P)
};

// Whether `loss` can train `decoder`: InvalidArgument naming both for gae with mlp.
Status CheckLossFor(DecoderKind decoder, LinkLoss loss);

// The most bytes LossAndGrad's scratch holds for a batch of at most `rows` embedding rows, `n`
// positives and `k` negatives (scores and their gradients; the mlp's activations; gae's R x R
// scores and its positive pairs), for a memory plan.
int64_t LossScratchBytes(const DecoderConfig& config, LinkLoss loss, int64_t rows, int64_t n,
                         int64_t k);

class LinkDecoder {
 public:
  // A decoder with freshly initialised parameters. InvalidArgument on a bad config (dim <= 0,
  // hidden_dim <= 0 for mlp).
  static Result<std::unique_ptr<LinkDecoder>> Create(const DecoderConfig& config);
  ~LinkDecoder();
  LinkDecoder(const LinkDecoder&) = delete;
  LinkDecoder& operator=(const LinkDecoder&) = delete;

  const DecoderConfig& config() const { return config_; }

  // Writes scores[i] of the pairs (src[i], dst[i]) over emb (rows x config().dim); *scores is
  // resized to src.size(). InvalidArgument if an index is outside [0, rows), src and dst differ in
  // size, or emb is null while there are rows.
  Status ScorePairs(const float* emb, int64_t rows, std::span<const int32_t> src,
                    std::span<const int32_t> dst, std::vector<float>* scores) const;
  // Scores of each src[i] against every candidate cand[j]: scores[i*k+j] (n x k, resized), through
  // one GEMM (dot, distmult) whose rounding may depend on a pair's place in the call.
  // InvalidArgument as ScorePairs.
  Status ScoreCross(const float* emb, int64_t rows, std::span<const int32_t> src,
                    std::span<const int32_t> cand, std::vector<float>* scores) const;
  // Scores of `src` against each candidate (ranking): dot and distmult score each pair as
  // ScorePairs does (a double sum in column order), so equal candidates tie exactly and a score
  // does not depend on the other candidates of the call (about a one-row GEMM's time,
  // BENCHMARKS.md, "Link scores"); mlp as ScoreCross. InvalidArgument as ScorePairs.
  Status ScoreCandidates(const float* emb, int64_t rows, int32_t src, std::span<const int32_t> cand,
                         std::vector<float>* scores) const;
  // The loss of one training batch and its gradients: writes d loss / d emb into grad_emb
  // (rows x dim; zeroed first, so overwritten) and ACCUMULATES the decoder parameters' gradients
  // (Parameters()[i].grad). InvalidArgument on indices out of range, pos_src and pos_dst of
  // different sizes, no positives, no negatives (k == 0), a null emb / grad_emb, gae with mlp
  // (CheckLossFor), or gae over rows whose every pair is positive. On an error nothing is written.
  Result<LinkLossResult> LossAndGrad(const float* emb, int64_t rows, const EdgeBatchRows& batch,
                                     LinkLoss loss, float* grad_emb);

  // The parameter tensors (none for dot), with gradients; storage owned by the decoder, valid for
  // its lifetime.
  std::vector<Parameter> Parameters();
  // Sets every parameter gradient to 0.
  void ZeroGrad();

 private:
  struct State;  // parameters and reusable scratch (src/model/link_decoder.cpp)
  explicit LinkDecoder(const DecoderConfig& config);
  // LossAndGrad for LinkLoss::kGae, its arguments checked.
  Result<LinkLossResult> GaeLossAndGrad(const float* emb, int64_t rows, const EdgeBatchRows& batch,
                                        float* grad_emb);
  // ScoreCross (`alone` false) and ScoreCandidates (`alone` true, each pair as ScorePairs).
  Status Cross(const float* emb, int64_t rows, std::span<const int32_t> src,
               std::span<const int32_t> cand, bool alone, std::vector<float>* scores) const;

  // Constant after construction.
  DecoderConfig config_;
  std::unique_ptr<State> state_;
};

}  // namespace skiff::model
