// Dense and element-wise ops: bias, ReLU/ELU, dropout (bit-identical mask), gather from device and
// pinned host memory, scatter-add, cross-entropy, log-softmax, Adam/SGD and cuBLAS GEMM, each
// against its CPU reference.
//
// Tolerances: element-wise ops rtol 1e-6 (ELU's expm1f/expf: 1e-5); reductions (BiasGrad,
// ScatterAddRows with atomics) 1e-5 of the absolute sum; cross-entropy / log-softmax 1e-5
// (__expf); Adam 1e-5 relative per step; GEMM fp32 1e-5 * k-scaled magnitude, TF32 2e-3,
// bf16 2e-2 (relative to sum |a||b|).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gather.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/optimizer.cuh"
#include "kernels/cuda/pinned_buffer.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

// Row x column shapes around warp and block boundaries.
const std::vector<std::pair<int64_t, int64_t>>& Shapes() {
  static const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {0, 5}, {1, 1}, {1, 1024}, {3, 33}, {31, 7}, {257, 129}, {1000, 41}, {4099, 256}};
  return shapes;
}

TEST_CASE("Bias, ReLU, ELU and dropout match the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (const auto& [rows, cols] : Shapes()) {
    const int64_t n = rows * cols;
    CAPTURE(rows);
    CAPTURE(cols);
    const std::vector<float> x = RandomFloats(n, 41, -3.0f, 3.0f);
    const std::vector<float> g = RandomFloats(n, 42);
    const std::vector<float> bias = RandomFloats(cols, 43);
    DeviceBuffer<float> dx(x, s), dg(g, s), dbias(bias, s), dy(n), dgx(n);

    std::vector<float> y_cpu = x;
    cpu::BiasAdd(rows, cols, bias.data(), y_cpu.data());
    dy.Upload(x, s);
    SKIFF_REQUIRE_OK(cuda::BiasAdd(rows, cols, dbias.get(), dy.get(), s));
    ExpectClose(dy.Download(s), y_cpu, 1e-6f, 0, "BiasAdd");

    std::vector<float> gb_cpu = bias;  // accumulates
    cpu::BiasGrad(rows, cols, g.data(), gb_cpu.data());
    std::vector<float> gb_mag(cols, 0.0f);
    cpu::BiasGrad(rows, cols, Abs(g).data(), gb_mag.data());
    for (int64_t c = 0; c < cols; ++c) gb_mag[c] += std::fabs(bias[c]);
    DeviceBuffer<float> dgb(bias, s);
    SKIFF_REQUIRE_OK(cuda::BiasGrad(rows, cols, dg.get(), dgb.get(), s));
    ExpectClose(dgb.Download(s), gb_cpu, 1e-5f, 1e-6f, "BiasGrad", &gb_mag);

    std::vector<float> relu_cpu(n), relu_grad_cpu(n);
    cpu::ReluForward(n, x.data(), relu_cpu.data());
    cpu::ReluBackward(n, relu_cpu.data(), g.data(), relu_grad_cpu.data());
    SKIFF_REQUIRE_OK(cuda::ReluForward(n, dx.get(), dy.get(), s));
    ExpectClose(dy.Download(s), relu_cpu, 0, 0, "ReluForward");
    SKIFF_REQUIRE_OK(cuda::ReluBackward(n, dy.get(), dg.get(), dgx.get(), s));
    ExpectClose(dgx.Download(s), relu_grad_cpu, 0, 0, "ReluBackward");

    std::vector<float> elu_cpu(n), elu_grad_cpu(n);
    cpu::EluForward(n, 1.0f, x.data(), elu_cpu.data());
    cpu::EluBackward(n, 1.0f, x.data(), g.data(), elu_grad_cpu.data());
    SKIFF_REQUIRE_OK(cuda::EluForward(n, 1.0f, dx.get(), dy.get(), s));
    ExpectClose(dy.Download(s), elu_cpu, 1e-5f, 1e-7f, "EluForward");
    SKIFF_REQUIRE_OK(cuda::EluBackward(n, 1.0f, dx.get(), dg.get(), dgx.get(), s));
    ExpectClose(dgx.Download(s), elu_grad_cpu, 1e-5f, 1e-7f, "EluBackward");

    for (float p : {0.0f, 0.5f, 0.9f}) {
      CAPTURE(p);
      std::vector<float> drop_cpu(n), drop_grad_cpu(n);
      cpu::DropoutForward(n, p, 1234, x.data(), drop_cpu.data());
      cpu::DropoutBackward(n, p, 1234, g.data(), drop_grad_cpu.data());
      SKIFF_REQUIRE_OK(cuda::DropoutForward(n, p, 1234, dx.get(), dy.get(), s));
      ExpectClose(dy.Download(s), drop_cpu, 1e-6f, 0, "DropoutForward (same mask)");
      SKIFF_REQUIRE_OK(cuda::DropoutBackward(n, p, 1234, dg.get(), dgx.get(), s));
      ExpectClose(dgx.Download(s), drop_grad_cpu, 1e-6f, 0, "DropoutBackward (same mask)");
    }
  }
  // In place (x and y alias) for the activations that allow it.
  const std::vector<float> x = RandomFloats(1000, 44, -2.0f, 2.0f);
  std::vector<float> ref(1000);
  cpu::EluForward(1000, 0.5f, x.data(), ref.data());
  DeviceBuffer<float> dx(x, s);
  SKIFF_REQUIRE_OK(cuda::EluForward(1000, 0.5f, dx.get(), dx.get(), s));
  ExpectClose(dx.Download(s), ref, 1e-5f, 1e-7f, "EluForward in place");
}

void CheckGather(const float* src_device_view, const std::vector<float>& src, int64_t num_rows,
                 int64_t dim, const TestStream& stream, const std::string& what) {
  const cudaStream_t s = stream.get();
  std::mt19937_64 rng(51);
  std::uniform_int_distribution<int64_t> pick(0, num_rows - 1);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{5000}}) {
    std::vector<int64_t> idx(n);
    for (auto& i : idx) i = pick(rng);
    std::vector<float> ref(n * dim);
    cpu::GatherRows(src.data(), dim, idx.data(), n, ref.data());
    DeviceBuffer<int64_t> didx(idx, s);
    DeviceBuffer<float> dout(n * dim);
    SKIFF_REQUIRE_OK(cuda::GatherRows(src_device_view, dim, didx.get(), n, dout.get(), s));
    ExpectClose(dout.Download(s), ref, 0, 0, what + " n=" + std::to_string(n));
  }
}

TEST_CASE("GatherRows from device memory and zero-copy from pinned host memory") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (int64_t dim : {1, 3, 4, 100, 128, 1024}) {
    CAPTURE(dim);
    const int64_t num_rows = 777;
    const std::vector<float> src = RandomFloats(num_rows * dim, 52);
    DeviceBuffer<float> dsrc(src, s);
    CheckGather(dsrc.get(), src, num_rows, dim, stream, "device source");

    auto pinned = cuda::PinnedBuffer::Create(src.size() * sizeof(float));
    REQUIRE_MESSAGE(pinned.ok(), pinned.status().ToString());
    std::memcpy(pinned->data(), src.data(), src.size() * sizeof(float));
    CheckGather(static_cast<const float*>(pinned->data()), src, num_rows, dim, stream,
                "pinned host source");
  }
  // Pageable host memory is refused, not faulted on.
  std::vector<float> pageable(64, 1.0f);
  DeviceBuffer<int64_t> idx(std::vector<int64_t>{0, 1}, s);
  DeviceBuffer<float> out(2 * 32);
  const Status st = cuda::GatherRows(pageable.data(), 32, idx.get(), 2, out.get(), s);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("pageable") != std::string::npos);
}

TEST_CASE("ScatterAddRows accumulates duplicates like the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (int64_t dim : {1, 5, 128, 1000}) {
    CAPTURE(dim);
    const int64_t n = 3000, dst_rows = 17;  // many duplicates per destination row
    std::vector<int64_t> idx(n);
    std::mt19937_64 rng(61);
    for (auto& i : idx) i = static_cast<int64_t>(rng() % dst_rows);
    const std::vector<float> src = RandomFloats(n * dim, 62);
    std::vector<float> ref = RandomFloats(dst_rows * dim, 63);
    std::vector<float> mag = Abs(ref);
    DeviceBuffer<float> dsrc(src, s), ddst(ref, s);
    DeviceBuffer<int64_t> didx(idx, s);
    cpu::ScatterAddRows(src.data(), dim, idx.data(), n, ref.data());
    cpu::ScatterAddRows(Abs(src).data(), dim, idx.data(), n, mag.data());
    SKIFF_REQUIRE_OK(cuda::ScatterAddRows(dsrc.get(), dim, didx.get(), n, ddst.get(), s));
    ExpectClose(ddst.Download(s), ref, 1e-5f, 1e-6f, "ScatterAddRows", &mag);
  }
}

TEST_CASE("ScatterRows puts rows into distinct slots like the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (int64_t dim : {1, 3, 4, 128, 1000}) {
    CAPTURE(dim);
    const int64_t dst_rows = 5000;
    std::vector<int64_t> idx(dst_rows);
    std::iota(idx.begin(), idx.end(), 0);
    std::shuffle(idx.begin(), idx.end(), std::mt19937_64(64));
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{77}, int64_t{4000}}) {
      const std::vector<float> src = RandomFloats(std::max<int64_t>(n, 1) * dim, 65);
      std::vector<float> ref = RandomFloats(dst_rows * dim, 66);
      DeviceBuffer<float> dsrc(src, s), ddst(ref, s);
      DeviceBuffer<int64_t> didx(std::vector<int64_t>(idx.begin(), idx.begin() + n), s);
      cpu::ScatterRows(src.data(), dim, idx.data(), n, ref.data());
      SKIFF_REQUIRE_OK(cuda::ScatterRows(dsrc.get(), dim, didx.get(), n, ddst.get(), s));
      ExpectClose(ddst.Download(s), ref, 0, 0, "ScatterRows n=" + std::to_string(n));
    }
  }
}

TEST_CASE("SoftmaxCrossEntropy and LogSoftmax match the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (const auto& [rows, classes] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 3}, {1, 1}, {5, 2}, {37, 47}, {1024, 172}, {3, 1000}}) {
    CAPTURE(rows);
    CAPTURE(classes);
    const std::vector<float> logits = RandomFloats(rows * classes, 71, -5.0f, 5.0f);
    std::vector<int32_t> labels(rows);
    std::mt19937_64 rng(72);
    for (auto& l : labels) l = (rng() % 4 == 0) ? -1 : static_cast<int32_t>(rng() % classes);
    std::vector<float> grad_cpu(rows * classes);
    int64_t correct_cpu = 0;
    const float loss_cpu = cpu::SoftmaxCrossEntropy(rows, classes, logits.data(), labels.data(),
                                                    grad_cpu.data(), &correct_cpu);
    DeviceBuffer<float> dlogits(logits, s), dgrad(rows * classes);
    DeviceBuffer<int32_t> dlabels(labels, s);
    DeviceBuffer<cuda::LossStats> dstats(1);
    SKIFF_REQUIRE_OK(cuda::SoftmaxCrossEntropy(rows, classes, dlogits.get(), dlabels.get(),
                                               dgrad.get(), dstats.get(), s));
    const cuda::LossStats stats = dstats.Download(s)[0];
    CHECK(stats.loss == doctest::Approx(loss_cpu).epsilon(1e-5));
    CHECK(stats.correct == correct_cpu);
    ExpectClose(dgrad.Download(s), grad_cpu, 1e-4f, 1e-7f, "grad_logits");

    std::vector<float> lsm_cpu(rows * classes);
    cpu::LogSoftmax(rows, classes, logits.data(), lsm_cpu.data());
    SKIFF_REQUIRE_OK(cuda::LogSoftmax(rows, classes, dlogits.get(), dlogits.get(), s));  // aliasing
    ExpectClose(dlogits.Download(s), lsm_cpu, 1e-5f, 1e-5f, "LogSoftmax in place");
  }
}

TEST_CASE("Adam and SGD steps match the CPU over several steps") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (int64_t n : {1, 31, 1000, 100003}) {
    CAPTURE(n);
    cpu::AdamConfig cfg;
    cfg.lr = 0.01f;
    cfg.weight_decay = 5e-4f;
    std::vector<float> p = RandomFloats(n, 81), m(n, 0.0f), v(n, 0.0f);
    DeviceBuffer<float> dp(p, s), dm(m, s), dv(v, s), dgrad(n);
    std::vector<float> sp = p, buf(n, 0.0f);
    DeviceBuffer<float> dsp(sp, s), dbuf(buf, s);
    for (int64_t step = 1; step <= 5; ++step) {
      const std::vector<float> grad = RandomFloats(n, 100 + step);
      dgrad.Upload(grad, s);
      cpu::AdamStep(n, cfg, step, grad.data(), p.data(), m.data(), v.data());
      SKIFF_REQUIRE_OK(cuda::AdamStep(n, cfg, step, dgrad.get(), dp.get(), dm.get(), dv.get(), s));
      cpu::SgdStep(n, 0.1f, 0.9f, 1e-4f, grad.data(), sp.data(), buf.data());
      SKIFF_REQUIRE_OK(cuda::SgdStep(n, 0.1f, 0.9f, 1e-4f, dgrad.get(), dsp.get(), dbuf.get(), s));
    }
    ExpectClose(dp.Download(s), p, 1e-5f, 1e-6f, "Adam params");
    ExpectClose(dm.Download(s), m, 1e-5f, 1e-7f, "Adam m");
    ExpectClose(dv.Download(s), v, 1e-5f, 1e-9f, "Adam v");
    ExpectClose(dsp.Download(s), sp, 1e-5f, 1e-6f, "SGD params");
  }
}

TEST_CASE("Gemm (fp32, TF32, bf16) matches the CPU for every transpose and awkward sizes") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  auto handle = cuda::CublasHandle::Create();
  REQUIRE_MESSAGE(handle.ok(), handle.status().ToString());
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c : {Case{0, 3, 4}, Case{3, 0, 4}, Case{5, 3, 0}, Case{1, 1, 1},
                       Case{33, 17, 129}, Case{256, 40, 602}, Case{1024, 256, 100}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::string what = "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                                 " k=" + std::to_string(c.k) + (ta ? " A^T" : "") +
                                 (tb ? " B^T" : "");
        CAPTURE(what);
        // Row strides padded by 3 to check ld handling.
        const int64_t a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;
        const int64_t b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
        const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = c.n + 3;
        const std::vector<float> a = RandomFloats(a_rows * lda, 91);
        const std::vector<float> bm = RandomFloats(b_rows * ldb, 92);
        const std::vector<float> c0 = RandomFloats(c.m * ldc, 93);
        std::vector<float> ref = c0, mag = Abs(c0);
        cpu::Gemm(ta, tb, c.m, c.n, c.k, 1.5f, a.data(), lda, bm.data(), ldb, 0.5f, ref.data(),
                  ldc);
        cpu::Gemm(ta, tb, c.m, c.n, c.k, 1.5f, Abs(a).data(), lda, Abs(bm).data(), ldb, 0.5f,
                  mag.data(), ldc);
        DeviceBuffer<float> da(a, s), db(bm, s), dc(c0, s);
        for (auto [precision, rtol] : {std::pair{cuda::GemmPrecision::kFp32, 1e-5f},
                                       std::pair{cuda::GemmPrecision::kTf32, 2e-3f},
                                       std::pair{cuda::GemmPrecision::kBf16, 2e-2f}}) {
          dc.Upload(c0, s);
          SKIFF_REQUIRE_OK(cuda::Gemm(ta, tb, c.m, c.n, c.k, 1.5f, da.get(), lda, db.get(), ldb,
                                      0.5f, dc.get(), ldc, *handle, precision, s));
          ExpectClose(dc.Download(s), ref, rtol, 1e-6f,
                      what + " precision " + std::to_string(static_cast<int>(precision)), &mag);
        }
      }
    }
  }
  // A short stride is a clear error, not a wrong answer.
  DeviceBuffer<float> x(64);
  const Status st = cuda::Gemm(false, false, 4, 4, 4, 1.0f, x.get(), 3, x.get(), 4, 0.0f, x.get(),
                               4, *handle, cuda::GemmPrecision::kFp32, s);
  CHECK(st.code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skiff::gpu_testing
