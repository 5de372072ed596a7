// GAT attention: AttentionDot, edge softmax and attention-weighted aggregation, forward and
// backward, CUDA vs CPU reference over awkward blocks, heads in {1, 3, 8} and dims 1..129.
//
// Tolerances: dot products and aggregations |gpu - cpu| <= 1e-5 * M + 1e-6 (M = the same op on
// absolute values); softmax outputs and their gradients (exp via __expf) rtol 1e-4, atol 1e-6.
#include <doctest/doctest.h>

#include "kernels/cpu/gat.h"
#include "kernels/cuda/gat.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

constexpr float kSlope = 0.2f;

void CheckGat(const Block& b, int64_t heads, int64_t dim, const TestStream& stream) {
  const cudaStream_t s = stream.get();
  const std::string what =
      b.name + ", heads " + std::to_string(heads) + ", dim " + std::to_string(dim);
  CAPTURE(what);
  const int64_t nnz = b.nnz();
  const std::vector<float> feat = RandomFloats(b.num_src * heads * dim, 31);
  const std::vector<float> attn = RandomFloats(heads * dim, 32);
  const std::vector<float> er = RandomFloats(b.num_dst * heads, 33);
  const std::vector<float> grad_out = RandomFloats(b.num_dst * heads * dim, 34);
  DeviceBuffer<int64_t> indptr(b.indptr, s);
  DeviceBuffer<int32_t> indices(b.indices, s);
  DeviceBuffer<float> d_feat(feat, s), d_attn(attn, s), d_er(er, s), d_grad_out(grad_out, s);

  // AttentionDot: el = <feat, attn>.
  std::vector<float> el_cpu(b.num_src * heads), el_mag(b.num_src * heads);
  cpu::AttentionDot(b.num_src, heads, dim, feat.data(), attn.data(), el_cpu.data());
  cpu::AttentionDot(b.num_src, heads, dim, Abs(feat).data(), Abs(attn).data(), el_mag.data());
  DeviceBuffer<float> d_el(b.num_src * heads);
  SKIFF_REQUIRE_OK(
      cuda::AttentionDot(b.num_src, heads, dim, d_feat.get(), d_attn.get(), d_el.get(), s));
  ExpectClose(d_el.Download(s), el_cpu, 1e-5f, 1e-6f, what + " AttentionDot", &el_mag);

  // Edge softmax forward (from the CPU's el so both sides see the same input).
  d_el.Upload(el_cpu, s);
  std::vector<float> alpha_cpu(nnz * heads);
  cpu::GatEdgeSoftmaxForward(b.num_dst, b.indptr.data(), b.indices.data(), heads, el_cpu.data(),
                             er.data(), kSlope, alpha_cpu.data());
  DeviceBuffer<float> d_alpha(nnz * heads);
  SKIFF_REQUIRE_OK(cuda::GatEdgeSoftmaxForward(b.num_dst, indptr.get(), indices.get(), heads,
                                               d_el.get(), d_er.get(), kSlope, d_alpha.get(), s));
  ExpectClose(d_alpha.Download(s), alpha_cpu, 1e-4f, 1e-6f, what + " edge softmax");
  d_alpha.Upload(alpha_cpu, s);

  // Aggregation forward.
  std::vector<float> out_cpu(b.num_dst * heads * dim), out_mag(b.num_dst * heads * dim);
  cpu::GatAggregateForward(b.num_dst, b.indptr.data(), b.indices.data(), heads, dim,
                           alpha_cpu.data(), feat.data(), out_cpu.data());
  cpu::GatAggregateForward(b.num_dst, b.indptr.data(), b.indices.data(), heads, dim,
                           alpha_cpu.data(), Abs(feat).data(), out_mag.data());
  DeviceBuffer<float> d_out(b.num_dst * heads * dim);
  d_out.Fill(0xff, s);
  SKIFF_REQUIRE_OK(cuda::GatAggregateForward(b.num_dst, indptr.get(), indices.get(), heads, dim,
                                             d_alpha.get(), d_feat.get(), d_out.get(), s));
  ExpectClose(d_out.Download(s), out_cpu, 1e-5f, 1e-6f, what + " aggregate forward", &out_mag);

  // Aggregation backward.
  std::vector<float> gfeat_cpu(b.num_src * heads * dim), galpha_cpu(nnz * heads);
  cpu::GatAggregateBackward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), heads, dim,
                            alpha_cpu.data(), feat.data(), grad_out.data(), gfeat_cpu.data(),
                            galpha_cpu.data());
  std::vector<float> gfeat_mag(b.num_src * heads * dim), galpha_mag(nnz * heads);
  cpu::GatAggregateBackward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), heads, dim,
                            alpha_cpu.data(), Abs(feat).data(), Abs(grad_out).data(),
                            gfeat_mag.data(), galpha_mag.data());
  DeviceBuffer<float> d_gfeat(b.num_src * heads * dim), d_galpha(nnz * heads);
  d_gfeat.Fill(0xff, s);
  d_galpha.Fill(0xff, s);
  SKIFF_REQUIRE_OK(cuda::GatAggregateBackward(b.num_dst, b.num_src, indptr.get(), indices.get(),
                                              heads, dim, d_alpha.get(), d_feat.get(),
                                              d_grad_out.get(), d_gfeat.get(), d_galpha.get(), s));
  ExpectClose(d_gfeat.Download(s), gfeat_cpu, 1e-5f, 1e-6f, what + " grad_feat", &gfeat_mag);
  ExpectClose(d_galpha.Download(s), galpha_cpu, 1e-5f, 1e-6f, what + " grad_alpha", &galpha_mag);

  // Edge softmax backward (from the CPU's grad_alpha).
  d_galpha.Upload(galpha_cpu, s);
  std::vector<float> gel_cpu(b.num_src * heads), ger_cpu(b.num_dst * heads);
  cpu::GatEdgeSoftmaxBackward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), heads,
                              el_cpu.data(), er.data(), kSlope, alpha_cpu.data(), galpha_cpu.data(),
                              gel_cpu.data(), ger_cpu.data());
  DeviceBuffer<float> d_gel(b.num_src * heads), d_ger(b.num_dst * heads);
  d_gel.Fill(0xff, s);
  d_ger.Fill(0xff, s);
  SKIFF_REQUIRE_OK(cuda::GatEdgeSoftmaxBackward(
      b.num_dst, b.num_src, indptr.get(), indices.get(), heads, d_el.get(), d_er.get(), kSlope,
      d_alpha.get(), d_galpha.get(), d_gel.get(), d_ger.get(), s));
  // Gradients through a softmax are differences of similar terms: scale by the largest
  // |grad_alpha| of the block so cancellation does not make the relative test meaningless.
  float galpha_max = 0;
  for (float v : galpha_cpu) galpha_max = std::max(galpha_max, std::fabs(v));
  const float atol = 1e-5f * (1.0f + galpha_max);
  ExpectClose(d_gel.Download(s), gel_cpu, 1e-4f, atol, what + " grad_el");
  ExpectClose(d_ger.Download(s), ger_cpu, 1e-4f, atol, what + " grad_er");

  // AttentionDotBackward accumulates: start from a non-zero gradient.
  const std::vector<float> gel = RandomFloats(b.num_src * heads, 35);
  std::vector<float> gfeat2_cpu = RandomFloats(b.num_src * heads * dim, 36);
  std::vector<float> gattn_cpu = RandomFloats(heads * dim, 37);
  DeviceBuffer<float> d_gel2(gel, s), d_gfeat2(gfeat2_cpu, s), d_gattn(gattn_cpu, s);
  cpu::AttentionDotBackward(b.num_src, heads, dim, feat.data(), attn.data(), gel.data(),
                            gfeat2_cpu.data(), gattn_cpu.data());
  std::vector<float> gattn_mag(heads * dim, 1.0f), gfeat2_mag(b.num_src * heads * dim, 1.0f);
  cpu::AttentionDotBackward(b.num_src, heads, dim, Abs(feat).data(), Abs(attn).data(),
                            Abs(gel).data(), gfeat2_mag.data(), gattn_mag.data());
  SKIFF_REQUIRE_OK(cuda::AttentionDotBackward(b.num_src, heads, dim, d_feat.get(), d_attn.get(),
                                              d_gel2.get(), d_gfeat2.get(), d_gattn.get(), s));
  ExpectClose(d_gfeat2.Download(s), gfeat2_cpu, 1e-5f, 1e-6f, what + " AttentionDot grad_feat",
              &gfeat2_mag);
  ExpectClose(d_gattn.Download(s), gattn_cpu, 1e-5f, 1e-6f, what + " AttentionDot grad_attn",
              &gattn_mag);
}

TEST_CASE("GAT ops match the CPU over awkward blocks, heads and dims") {
  TestStream stream;
  for (const Block& b : AwkwardBlocks()) {
    for (int64_t heads : {1, 3, 8}) {
      for (int64_t dim : {1, 4, 7, 32, 33, 64, 129}) CheckGat(b, heads, dim, stream);
    }
  }
}

}  // namespace
}  // namespace skiff::gpu_testing
