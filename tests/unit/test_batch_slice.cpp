// Micro-batches: SliceBatch keeps each seed's computation graph, and a model computed part by part
// sums to the whole batch's gradients.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/sampler/batch_slice.h"
#include "tests/unit/test_model_util.h"

using namespace skiff;

namespace {

// The global IDs of row `d`'s neighbours in block `l` (local IDs are rows of input_nodes: every
// block's sources are a prefix of them).
std::vector<int64_t> GlobalRow(const sampler::MiniBatch& b, size_t l, int64_t d) {
  const sampler::Block& block = b.blocks[l];
  std::vector<int64_t> out;
  for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e) {
    out.push_back(b.input_nodes[block.indices[e]]);
  }
  return out;
}

// Checks that `part` is the slice of `whole` for seeds [first, first + count).
void CheckSlice(const sampler::MiniBatch& whole, const sampler::BatchSlice& slice, int64_t first,
                int64_t count) {
  const sampler::MiniBatch& part = slice.batch;
  REQUIRE(part.seeds.size() == static_cast<size_t>(count));
  REQUIRE(part.blocks.size() == whole.blocks.size());
  for (int64_t i = 0; i < count; ++i) {
    CHECK(part.seeds[i] == whole.seeds[first + i]);
    CHECK(part.labels[i] == whole.labels[first + i]);
  }
  // Input rows name the whole batch's rows of the same nodes.
  REQUIRE(slice.input_rows.size() == part.input_nodes.size());
  for (size_t i = 0; i < part.input_nodes.size(); ++i) {
    CHECK(whole.input_nodes[slice.input_rows[i]] == part.input_nodes[i]);
  }
  std::map<int64_t, int64_t> whole_row;  // global ID -> local row in the whole batch
  for (size_t r = 0; r < whole.input_nodes.size(); ++r) whole_row[whole.input_nodes[r]] = r;
  for (size_t l = 0; l < part.blocks.size(); ++l) {
    const sampler::Block& pb = part.blocks[l];
    const sampler::Block& wb = whole.blocks[l];
    CHECK(pb.num_src <= wb.num_src);
    if (l + 1 < part.blocks.size()) CHECK(pb.num_dst == part.blocks[l + 1].num_src);
    if (wb.condensed()) {
      CHECK(pb.condensed());
      continue;
    }
    REQUIRE(pb.indptr.size() == static_cast<size_t>(pb.num_dst + 1));
    for (int64_t d = 0; d < pb.num_dst; ++d) {
      const int64_t w = whole_row.at(part.input_nodes[d]);
      REQUIRE(w < wb.num_dst);
      CHECK(GlobalRow(part, l, d) == GlobalRow(whole, l, w));
    }
    for (int32_t s : pb.indices) CHECK((s >= 0 && s < pb.num_src));
    if (!wb.src_degree.empty()) {
      REQUIRE(pb.src_degree.size() == static_cast<size_t>(pb.num_src));
      for (int64_t s = 0; s < pb.num_src; ++s) {
        CHECK(pb.src_degree[s] == wb.src_degree[whole_row.at(part.input_nodes[s])]);
      }
    }
  }
  // The top block's destinations are the part's seeds, in order.
  for (int64_t i = 0; i < count; ++i) CHECK(part.input_nodes[i] == part.seeds[i]);
}

model::ModelConfig SmallConfig(model::ModelKind kind) {
  model::ModelConfig c;
  c.kind = kind;
  c.in_dim = 7;
  c.hidden_dim = 9;
  c.num_classes = 4;
  c.num_layers = 2;
  c.dropout = 0.0f;
  c.input_dropout = 0.0f;
  c.seed = 5;
  return c;
}

// Every parameter gradient of `m`, concatenated.
std::vector<float> Gradients(model::Model& m) {
  std::vector<float> out;
  for (const model::Parameter& p : m.Parameters()) out.insert(out.end(), p.grad, p.grad + p.size());
  return out;
}

}  // namespace

TEST_CASE("SliceBatch: every part keeps its seeds' rows, edges, degrees and input rows") {
  std::mt19937_64 rng(11);
  for (int layers : {1, 2, 3}) {
    CAPTURE(layers);
    std::vector<int64_t> sizes = {60, 31, 17, 9};
    sizes.erase(sizes.begin(), sizes.end() - (layers + 1));
    sampler::MiniBatch whole = testing::RandomMiniBatch(sizes, 5, 3, rng);
    testing::AddRandomDegrees(&whole, rng);
    const auto seeds = static_cast<int64_t>(whole.seeds.size());
    sampler::BatchSlice slice;  // reused across parts, as the model reuses it
    for (int parts : {1, 2, 3, static_cast<int>(seeds)}) {
      CAPTURE(parts);
      for (int p = 0; p < parts; ++p) {
        const int64_t first = seeds * p / parts, last = seeds * (p + 1) / parts;
        sampler::SliceBatch(whole, first, last - first, &slice);
        CheckSlice(whole, slice, first, last - first);
      }
    }
    // An empty part is empty.
    sampler::SliceBatch(whole, 2, 0, &slice);
    CHECK(slice.batch.seeds.empty());
    CHECK(slice.input_rows.empty());
  }
}

TEST_CASE("SliceBatch: a condensed block 0 stays condensed, with its destinations' rows") {
  std::mt19937_64 rng(12);
  sampler::MiniBatch whole = testing::RandomMiniBatch({50, 20, 8}, 4, 3, rng);
  const int64_t kept = whole.blocks[0].num_dst;
  whole.input_nodes.resize(static_cast<size_t>(kept));
  whole.blocks[0] = sampler::Block{.num_dst = kept, .num_src = 50};
  sampler::BatchSlice slice;
  sampler::SliceBatch(whole, 3, 4, &slice);
  const sampler::Block& b0 = slice.batch.blocks[0];
  CHECK(b0.condensed());
  CHECK(b0.num_dst == slice.batch.blocks[1].num_src);
  CHECK(b0.num_src == b0.num_dst);
  REQUIRE(slice.input_rows.size() == static_cast<size_t>(b0.num_dst));
  for (size_t i = 0; i < slice.input_rows.size(); ++i) {
    CHECK(slice.input_rows[i] < kept);
    CHECK(whole.input_nodes[slice.input_rows[i]] == slice.batch.input_nodes[i]);
  }
}

TEST_CASE("model: a batch computed in parts has the whole batch's gradients and loss") {
  std::mt19937_64 rng(13);
  for (const auto kind :
       {model::ModelKind::kSage, model::ModelKind::kGcn, model::ModelKind::kGat}) {
    for (const bool aggregated : {false, true}) {
      if (aggregated && kind != model::ModelKind::kSage) continue;
      CAPTURE(static_cast<int>(kind));
      CAPTURE(aggregated);
      const model::ModelConfig config = SmallConfig(kind);
      sampler::MiniBatch batch = testing::RandomMiniBatch({70, 30, 13}, 5, 4, rng);
      batch.labels[4] = -1;  // unlabelled seeds in more than one part
      if (kind == model::ModelKind::kGcn) testing::AddRandomDegrees(&batch, rng);
      const std::vector<float> x =
          testing::RandomVector(70 * static_cast<size_t>(config.in_dim), rng, -1, 1);
      model::BatchInput input{.batch = &batch, .x = x.data()};
      std::vector<float> dst_rows, agg;
      sampler::MiniBatch condensed = batch;
      if (aggregated) {
        const sampler::Block& b0 = batch.blocks[0];
        dst_rows.resize(static_cast<size_t>(b0.num_dst * config.in_dim));
        agg.resize(dst_rows.size());
        model::AggregateFirstLayerInput(b0, x.data(), config.in_dim, 0.0f, true, 3, dst_rows.data(),
                                        agg.data());
        condensed.input_nodes.resize(static_cast<size_t>(b0.num_dst));
        condensed.blocks[0] = sampler::Block{.num_dst = b0.num_dst, .num_src = b0.num_src};
        input = {.batch = &condensed, .x = dst_rows.data(), .aggregated = agg.data()};
      }
      auto whole = model::Model::CreateCpu(config);
      REQUIRE(whole.ok());
      REQUIRE((*whole)->ComputeGradients(input, 9).ok());
      const std::vector<float> expected = Gradients(**whole);
      const model::LossTotals expected_loss = *(*whole)->TakeLossTotals();
      for (int parts : {2, 3, 13, 40}) {
        CAPTURE(parts);
        auto m = model::Model::CreateCpu(config);
        REQUIRE(m.ok());
        // Gradients left from an earlier step are replaced, not added to.
        REQUIRE((*m)->ComputeGradients(input, 9).ok());
        REQUIRE((*m)->ComputeGradientsInParts(input, parts, 9).ok());
        (void)(*m)->TakeLossTotals();
        REQUIRE((*m)->ComputeGradientsInParts(input, parts, 9).ok());
        const std::vector<float> got = Gradients(**m);
        const model::LossTotals loss = *(*m)->TakeLossTotals();
        REQUIRE(got.size() == expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
          CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-4).scale(1e-3));
        }
        CHECK(loss.labelled == expected_loss.labelled);
        CHECK(loss.correct == expected_loss.correct);
        CHECK(loss.loss_sum == doctest::Approx(expected_loss.loss_sum).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("model: parts draw their own dropout masks, deterministically") {
  std::mt19937_64 rng(14);
  model::ModelConfig config = SmallConfig(model::ModelKind::kSage);
  config.dropout = 0.5f;
  sampler::MiniBatch batch = testing::RandomMiniBatch({40, 20, 10}, 4, 4, rng);
  const std::vector<float> x =
      testing::RandomVector(40 * static_cast<size_t>(config.in_dim), rng, -1, 1);
  const model::BatchInput input{.batch = &batch, .x = x.data()};
  auto a = model::Model::CreateCpu(config);
  auto b = model::Model::CreateCpu(config);
  REQUIRE((a.ok() && b.ok()));
  REQUIRE((*a)->ComputeGradientsInParts(input, 2, 21).ok());
  REQUIRE((*b)->ComputeGradientsInParts(input, 2, 21).ok());
  CHECK(Gradients(**a) == Gradients(**b));
  REQUIRE((*b)->ComputeGradientsInParts(input, 2, 22).ok());
  CHECK(Gradients(**a) != Gradients(**b));
}

TEST_CASE("model: one part, or a batch of one seed, is ComputeGradients") {
  std::mt19937_64 rng(15);
  const model::ModelConfig config = SmallConfig(model::ModelKind::kSage);
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{30, 12, 6}, std::vector<int64_t>{5, 2, 1}}) {
    sampler::MiniBatch batch = testing::RandomMiniBatch(sizes, 3, 4, rng);
    const std::vector<float> x =
        testing::RandomVector(static_cast<size_t>(sizes[0] * config.in_dim), rng, -1, 1);
    const model::BatchInput input{.batch = &batch, .x = x.data()};
    auto a = model::Model::CreateCpu(config);
    auto b = model::Model::CreateCpu(config);
    REQUIRE((a.ok() && b.ok()));
    REQUIRE((*a)->ComputeGradients(input, 4).ok());
    REQUIRE((*b)->ComputeGradientsInParts(input, sizes.back() == 1 ? 4 : 1, 4).ok());
    CHECK(Gradients(**a) == Gradients(**b));
  }
}

TEST_CASE("model: forward and evaluation in parts give the whole batch's logits and totals") {
  std::mt19937_64 rng(16);
  for (const auto kind : {model::ModelKind::kSage, model::ModelKind::kGcn}) {
    model::ModelConfig config = SmallConfig(kind);
    config.dropout = 0.5f;  // not applied outside training
    sampler::MiniBatch batch = testing::RandomMiniBatch({60, 25, 11}, 5, 4, rng);
    if (kind == model::ModelKind::kGcn) testing::AddRandomDegrees(&batch, rng);
    const std::vector<float> x =
        testing::RandomVector(60 * static_cast<size_t>(config.in_dim), rng, -1, 1);
    const model::BatchInput input{.batch = &batch, .x = x.data()};
    auto m = model::Model::CreateCpu(config);
    REQUIRE(m.ok());
    std::vector<float> logits, emb, part_logits, part_emb;
    REQUIRE((*m)->ForwardInput(input, false, 0, &logits, &emb).ok());
    REQUIRE((*m)->EvalStep(input).ok());
    const model::LossTotals whole = *(*m)->TakeLossTotals();
    for (int parts : {2, 4, 11}) {
      CAPTURE(parts);
      REQUIRE((*m)->ForwardInParts(input, parts, &part_logits, &part_emb).ok());
      REQUIRE(part_logits.size() == logits.size());
      REQUIRE(part_emb.size() == emb.size());
      for (size_t i = 0; i < logits.size(); ++i) {
        CHECK(part_logits[i] == doctest::Approx(logits[i]).epsilon(1e-5).scale(1e-3));
      }
      for (size_t i = 0; i < emb.size(); ++i) {
        CHECK(part_emb[i] == doctest::Approx(emb[i]).epsilon(1e-5).scale(1e-3));
      }
      REQUIRE((*m)->EvalStepInParts(input, parts).ok());
      const model::LossTotals totals = *(*m)->TakeLossTotals();
      CHECK(totals.labelled == whole.labelled);
      CHECK(totals.correct == whole.correct);
      CHECK(totals.loss_sum == doctest::Approx(whole.loss_sum).epsilon(1e-5));
    }
  }
}
