//===- GemmCallTest.cpp - library-call descriptors: checks and host runs --===//
//
// The host run of a GemmCall is what cuda-emu executes for a cuBLASLt step,
// so it must follow cuBLASLt's column-major semantics exactly: it is
// compared here with a direct double-precision evaluation of the formula
// for every transpose, batch stride and epilogue. The check must refuse
// any descriptor that would read or write outside its buffers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/ConvCall.h"
#include "kiln/Runtime/GemmCall.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace kiln;
using rt::GemmCall;
using rt::GemmEpilogue;

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

const uint8_t *bytes(const std::vector<float> &v) {
  return reinterpret_cast<const uint8_t *>(v.data());
}

/// D[b](i, j) straight from the definition, in double.
double expected(const GemmCall &g, const std::vector<float> &a, const std::vector<float> &b,
                const std::vector<float> &c, const std::vector<float> &bias, int64_t batch,
                int64_t i, int64_t j) {
  double sum = 0;
  for (int64_t p = 0; p < g.k; ++p) {
    double x = g.transA ? a[batch * g.strideA + i * g.lda + p] : a[batch * g.strideA + p * g.lda + i];
    double y = g.transB ? b[batch * g.strideB + p * g.ldb + j] : b[batch * g.strideB + j * g.ldb + p];
    sum += x * y;
  }
  double v = g.alpha * sum;
  if (g.c >= 0)
    v += g.beta * c[batch * g.strideC + j * g.ldc + i];
  if (g.bias >= 0)
    v += bias[i];
  if (g.epilogue == GemmEpilogue::Relu || g.epilogue == GemmEpilogue::BiasRelu)
    v = std::max(v, 0.0);
  return v;
}

TEST(GemmCall, HostRunFollowsCublasLtSemantics) {
  int cases = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (GemmEpilogue epilogue :
           {GemmEpilogue::None, GemmEpilogue::Relu, GemmEpilogue::Bias, GemmEpilogue::BiasRelu})
        for (bool broadcastA : {false, true}) {
          GemmCall g;
          g.m = 13, g.n = 7, g.k = 19, g.batch = 3;
          g.transA = ta, g.transB = tb;
          // Leading dimensions larger than the rows, as cuBLASLt allows.
          g.lda = (ta ? g.k : g.m) + 2;
          g.ldb = (tb ? g.n : g.k) + 1;
          g.ldc = g.m + 3;
          int64_t sizeA = g.lda * (ta ? g.m : g.k), sizeB = g.ldb * (tb ? g.k : g.n);
          g.strideA = broadcastA ? 0 : sizeA;
          g.strideB = sizeB;
          g.strideC = g.ldc * g.n;
          g.epilogue = epilogue;
          g.alpha = 0.75f;
          g.a = 0, g.b = 1;
          bool withBias = epilogue == GemmEpilogue::Bias || epilogue == GemmEpilogue::BiasRelu;
          g.bias = withBias ? 3 : -1;
          g.c = broadcastA ? 2 : -1; // some cases with a residual
          g.beta = g.c >= 0 ? 1.0f : 0.0f;
          std::vector<float> a = randomFloats(sizeA * g.batch, 1 + cases);
          std::vector<float> b = randomFloats(sizeB * g.batch, 100 + cases);
          std::vector<float> c = randomFloats(g.strideC * g.batch, 200 + cases);
          std::vector<float> bias = randomFloats(g.m, 300 + cases);
          std::vector<float> d(g.strideC * g.batch, -7.0f);
          std::string problem = rt::checkGemmCall(
              g, {ref::DType::F32, ref::DType::F32, ref::DType::F32, ref::DType::F32},
              {int64_t(a.size()), int64_t(b.size()), int64_t(c.size()), int64_t(bias.size())},
              ref::DType::F32, int64_t(d.size()), 0);
          ASSERT_EQ(problem, "");
          rt::runGemmOnHost(g, bytes(a), bytes(b), g.c >= 0 ? bytes(c) : nullptr,
                            withBias ? bytes(bias) : nullptr, reinterpret_cast<uint8_t *>(d.data()));
          for (int64_t batch = 0; batch < g.batch; ++batch)
            for (int64_t j = 0; j < g.n; ++j)
              for (int64_t i = 0; i < g.ldc; ++i) {
                float got = d[batch * g.strideC + j * g.ldc + i];
                if (i >= g.m) {
                  // Padding between columns is never written.
                  ASSERT_EQ(got, -7.0f);
                  continue;
                }
                ASSERT_NEAR(got, expected(g, a, b, c, bias, batch, i, j), 1e-4)
                    << "ta=" << ta << " tb=" << tb << " epilogue="
                    << rt::gemmEpilogueName(epilogue) << " batch=" << batch;
              }
          ++cases;
        }
  EXPECT_EQ(cases, 32);
}

TEST(GemmCall, Tf32RoundsTheInputs) {
  GemmCall g;
  g.m = g.n = 1, g.k = 1, g.lda = g.ldb = g.ldc = 1, g.a = 0, g.b = 1;
  std::vector<float> a = {1.0f + 1.0f / 4096}, b = {1.0f}, d(1);
  rt::runGemmOnHost(g, bytes(a), bytes(b), nullptr, nullptr, reinterpret_cast<uint8_t *>(d.data()));
  EXPECT_EQ(d[0], a[0]);
  g.tf32 = true; // 10 mantissa bits: 1 + 2^-12 rounds to 1
  rt::runGemmOnHost(g, bytes(a), bytes(b), nullptr, nullptr, reinterpret_cast<uint8_t *>(d.data()));
  EXPECT_EQ(d[0], 1.0f);
}

class GemmCallCheck : public ::testing::Test {
protected:
  void SetUp() override {
    g.m = 8, g.n = 4, g.k = 6, g.lda = 8, g.ldb = 6, g.ldc = 8, g.a = 0, g.b = 1;
  }
  std::string check(uint64_t arena = 1024) {
    return rt::checkGemmCall(g, types, elements, ref::DType::F32, outputElements, arena);
  }
  GemmCall g;
  std::vector<ref::DType> types = {ref::DType::F32, ref::DType::F32, ref::DType::F32,
                                   ref::DType::F32};
  std::vector<int64_t> elements = {48, 24, 32, 8};
  int64_t outputElements = 32;
};

TEST_F(GemmCallCheck, AcceptsAFittingCall) { EXPECT_EQ(check(), ""); }

TEST_F(GemmCallCheck, RefusesReadsAndWritesPastTheBuffers) {
  g.lda = 9; // the last column of A would end past its 48 elements
  EXPECT_NE(check().find("reads 53 elements of A, whose input has 48"), std::string::npos)
      << check();
  g.lda = 8;
  g.batch = 2, g.strideC = 32; // a second batch of D past the output
  EXPECT_NE(check().find("writes past the end of the step's output"), std::string::npos);
  g.batch = 1;
  g.ldc = 4; // smaller than D's rows
  EXPECT_NE(check().find("leading dimension smaller"), std::string::npos);
  g.ldc = 8;
  g.m = -1;
  EXPECT_NE(check().find("negative or oversized"), std::string::npos);
  g.m = int64_t(1) << 40;
  EXPECT_NE(check().find("negative or oversized"), std::string::npos);
  g.m = int64_t(1) << 31; // would be INT_MIN in cuBLASLt's and cblas's int
  EXPECT_NE(check().find("negative or oversized"), std::string::npos);
}

TEST_F(GemmCallCheck, RefusesMismatchedOperands) {
  g.a = 7;
  EXPECT_NE(check().find("takes A from a step input it does not have"), std::string::npos);
  g.a = 0;
  types[1] = ref::DType::F16;
  EXPECT_NE(check().find("reads B with another element type"), std::string::npos);
  types[1] = ref::DType::F32;
  g.epilogue = GemmEpilogue::Bias; // without a bias input
  EXPECT_NE(check().find("bias epilogue without a bias"), std::string::npos);
  g.bias = 3;
  EXPECT_EQ(check(), "");
  g.c = 2; // C with beta 0
  EXPECT_NE(check().find("beta without C, or C without beta"), std::string::npos);
  g.beta = 1;
  EXPECT_EQ(check(), "");
  g.epilogue = static_cast<GemmEpilogue>(9);
  EXPECT_NE(check().find("unknown epilogue"), std::string::npos);
  g.epilogue = GemmEpilogue::Bias;
  g.typeA = g.typeB = ref::DType::I32;
  EXPECT_NE(check().find("element types"), std::string::npos);
  g.typeA = g.typeB = ref::DType::F32;
  g.workspaceBytes = 512, g.workspaceOffset = 600;
  EXPECT_NE(check().find("workspace outside the arena"), std::string::npos);
  g.workspaceOffset = 512;
  EXPECT_EQ(check(), "");
}

} // namespace

namespace {

/// A 3x3 convolution, stride 2, padding 1, two groups, with bias.
rt::ConvCall smallConv() {
  rt::ConvCall g;
  g.n = 2, g.c = 4, g.h = 9, g.w = 7, g.k = 6, g.r = 3, g.s = 3, g.groups = 2;
  g.strideH = g.strideW = 2;
  g.padTop = g.padLeft = g.padBottom = g.padRight = 1;
  g.p = 5, g.q = 4;
  g.x = 0, g.filter = 1, g.bias = true, g.biasInput = 2;
  return g;
}

TEST(ConvCall, HostRunMatchesTheDefinition) {
  rt::ConvCall g = smallConv();
  g.relu = true;
  std::vector<float> x = randomFloats(2 * 4 * 9 * 7, 1), w = randomFloats(6 * 2 * 3 * 3, 2),
                     b = randomFloats(6, 3), y(2 * 6 * 5 * 4);
  ASSERT_EQ(rt::checkConvCall(g, {ref::DType::F32, ref::DType::F32, ref::DType::F32},
                              {int64_t(x.size()), int64_t(w.size()), int64_t(b.size())},
                              ref::DType::F32, int64_t(y.size()), 0),
            "");
  rt::runConvOnHost(g, bytes(x), bytes(w), bytes(b), reinterpret_cast<uint8_t *>(y.data()));
  int nonzero = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 6; ++k)
      for (int64_t p = 0; p < 5; ++p)
        for (int64_t q = 0; q < 4; ++q) {
          double sum = b[k];
          int64_t group = k / 3;
          for (int64_t c = 0; c < 2; ++c)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t s = 0; s < 3; ++s) {
                int64_t ih = 2 * p - 1 + r, iw = 2 * q - 1 + s;
                if (ih >= 0 && ih < 9 && iw >= 0 && iw < 7)
                  sum += double(x[((n * 4 + group * 2 + c) * 9 + ih) * 7 + iw]) *
                         w[((k * 2 + c) * 3 + r) * 3 + s];
              }
          float got = y[((n * 6 + k) * 5 + p) * 4 + q];
          ASSERT_NEAR(got, std::max(sum, 0.0), 1e-5);
          nonzero += got != 0;
        }
  EXPECT_GT(nonzero, 50); // random inputs: the ReLU keeps about half
}

/// `v`, logical [A, B, C, D] row-major, stored channels (B) last.
std::vector<float> channelsLast(const std::vector<float> &v, int64_t A, int64_t B, int64_t C,
                                int64_t D) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t d = 0; d < D; ++d)
          out[((a * C + c) * D + d) * B + b] = v[((a * B + b) * C + c) * D + d];
  return out;
}

// Channels last (x NHWC, the filter KRSC, y NPQK) is the same convolution:
// grouped, strided, non-square, on the same data permuted.
TEST(ConvCall, HostRunChannelsLastIsTheSameConvolution) {
  rt::ConvCall g = smallConv();
  g.relu = true;
  std::vector<float> x = randomFloats(2 * 4 * 9 * 7, 4), w = randomFloats(6 * 2 * 3 * 3, 5),
                     b = randomFloats(6, 6), y(2 * 6 * 5 * 4), yLast(y.size());
  rt::runConvOnHost(g, bytes(x), bytes(w), bytes(b), reinterpret_cast<uint8_t *>(y.data()));
  std::vector<float> xLast = channelsLast(x, 2, 4, 9, 7), wLast = channelsLast(w, 6, 2, 3, 3);
  g.nhwc = true;
  rt::runConvOnHost(g, bytes(xLast), bytes(wLast), bytes(b),
                    reinterpret_cast<uint8_t *>(yLast.data()));
  std::vector<float> expected = channelsLast(y, 2, 6, 5, 4);
  ASSERT_NE(expected, y); // the permutation moves elements: the test can fail
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(yLast[i], expected[i]) << i;
}

TEST(ConvCall, CheckRefusesInconsistentDescriptors) {
  std::vector<ref::DType> types = {ref::DType::F32, ref::DType::F32, ref::DType::F32};
  std::vector<int64_t> elements = {2 * 4 * 9 * 7, 6 * 2 * 3 * 3, 6};
  auto check = [&](const rt::ConvCall &g) {
    return rt::checkConvCall(g, types, elements, ref::DType::F32, 2 * 6 * 5 * 4, 1024);
  };
  rt::ConvCall g = smallConv();
  EXPECT_EQ(check(g), "");
  g.p = 6; // an output row the input does not have
  EXPECT_NE(check(g).find("output size that does not follow"), std::string::npos);
  g = smallConv();
  g.groups = 4; // 6 filters do not split into 4 groups
  EXPECT_NE(check(g).find("do not split into its groups"), std::string::npos);
  g = smallConv();
  g.h = 10; // x would be read past its 504 elements
  g.padBottom = 0;
  EXPECT_NE(check(g).find("elements of x"), std::string::npos) << check(g);
  g = smallConv();
  g.strideH = 0;
  EXPECT_NE(check(g).find("zero size, stride"), std::string::npos);
  g = smallConv();
  g.biasInput = -1;
  EXPECT_NE(check(g).find("bias flag without a bias input"), std::string::npos);
  g = smallConv();
  g.filter = 5;
  EXPECT_NE(check(g).find("takes the filter from a step input it does not have"),
            std::string::npos);
  g = smallConv();
  g.workspaceBytes = 2048;
  EXPECT_NE(check(g).find("workspace outside the arena"), std::string::npos);
  g = smallConv();
  g.n = int64_t(1) << 31; // cuDNN's int
  EXPECT_NE(check(g).find("negative or oversized size"), std::string::npos);
}

TEST(ConvCall, CheckRefusesSizesWhoseProductsWrap) {
  // Every size below 2^31, but n*c*h*w = 2^68, k*c*r*s = 2^64 and
  // n*k*p*q = 2^64 wrap to 0:
  // unchecked, a descriptor over three empty tensors would pass and the host
  // run would read and write far outside them.
  rt::ConvCall g;
  g.n = g.c = g.k = int64_t(1) << 30;
  g.h = g.w = 16, g.r = 1, g.s = 16, g.p = 16, g.q = 1, g.groups = 1;
  g.strideH = g.strideW = g.dilationH = g.dilationW = 1;
  g.x = 0, g.filter = 1;
  EXPECT_NE(rt::checkConvCall(g, {ref::DType::F32, ref::DType::F32}, {0, 0}, ref::DType::F32, 0,
                              0)
                .find("more elements than a tensor may hold"),
            std::string::npos);
}

} // namespace
