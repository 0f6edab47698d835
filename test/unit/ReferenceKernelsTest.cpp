//===- ReferenceKernelsTest.cpp - the reference evaluator -----------------===//
//
// Checks the reference kernels against hand-computed values and against
// identities that relate different kernels (a transposed matmul equals a
// matmul of the transposed operand, a 1x1 convolution is a matmul, ...),
// on pseudo-random inputs.
//
//===----------------------------------------------------------------------===//

#include "kiln/Reference/Kernels.h"
#include "kiln/Reference/Ops.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace kiln::ref;

namespace {

Tensor make(DType dtype, Shape shape, std::vector<double> values) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  for (size_t k = 0; k < values.size(); ++k)
    t.setDouble(k, values[k]);
  return t;
}

/// An f32 tensor of values in [-bound, bound), and the same values as
/// floats in `xf` (what the f32 paths read); every `nanEvery`-th from the
/// 13th NaN (0: none).
Tensor randomF32(const Shape &shape, std::vector<float> &xf, unsigned seed, float bound = 4.0f,
                 int64_t nanEvery = 97) {
  Tensor x = Tensor::zeros(DType::F32, shape);
  xf.resize(x.f.size());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  for (size_t k = 0; k < xf.size(); ++k)
    x.f[k] = xf[k] = (nanEvery > 0 && static_cast<int64_t>(k) % nanEvery == 13) ? NAN : dist(rng);
  return x;
}

/// `got` (one element longer than `expected`, that one 12345) holds the
/// reference's results rounded to f32, bit for bit (NaN where they are
/// NaN), and nothing was written past them.
void expectSameBits(const Tensor &expected, const std::vector<float> &got, const char *what) {
  for (size_t k = 0; k < expected.f.size(); ++k) {
    float want = static_cast<float>(expected.f[k]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got[k])) << what << " @" << k;
      continue;
    }
    ASSERT_EQ(0, std::memcmp(&got[k], &want, 4)) << what << " @" << k;
  }
  EXPECT_EQ(got[expected.f.size()], 12345.0f) << what << ": one past the end written";
}

Tensor random(Shape shape, unsigned seed, DType dtype = DType::F32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  for (int64_t k = 0; k < t.numElements(); ++k)
    t.setDouble(k, dist(rng));
  return t;
}

void expectNear(const Tensor &a, const Tensor &b, double tolerance) {
  ASSERT_EQ(a.shape, b.shape);
  ASSERT_EQ(a.dtype, b.dtype);
  for (int64_t k = 0; k < a.numElements(); ++k)
    EXPECT_NEAR(a.getDouble(k), b.getDouble(k), tolerance) << "element " << k;
}

TEST(Float16, EveryFiniteHalfRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu))
      continue; // NaN payloads need not be preserved
    float f = halfToFloat(static_cast<uint16_t>(bits));
    EXPECT_EQ(floatToHalf(f), bits) << std::hex << bits;
  }
}

TEST(Float16, RoundsToNearestEven) {
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 1.0f / 2048)), 1.0f); // tie -> even
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 3.0f / 2048)), 1.0f + 4.0f / 2048);
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(70000.0f))));
  EXPECT_EQ(halfToFloat(floatToHalf(5.96e-8f)), 5.9604645e-8f); // smallest subnormal
}

TEST(BFloat16, RoundTripsAndRounds) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu))
      continue;
    EXPECT_EQ(floatToBFloat16(bfloat16ToFloat(static_cast<uint16_t>(bits))), bits);
  }
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.00390625f)), 1.0f); // tie -> even
}

TEST(Elementwise, BroadcastingBinary) {
  Tensor a = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(DType::F32, {3}, {10, 20, 30});
  Tensor sum = binary(BinaryKind::Add, a, b);
  expectNear(sum, make(DType::F32, {2, 3}, {11, 22, 33, 14, 25, 36}), 0);
  Tensor lt = binary(BinaryKind::Lt, a, make(DType::F32, {2, 1}, {2.5, 4.5}));
  EXPECT_EQ(lt.dtype, DType::I1);
  EXPECT_EQ(lt.i, (std::vector<int64_t>{1, 1, 0, 1, 0, 0}));
}

TEST(Elementwise, BroadcastFastPathsMatchExplicitBroadcast) {
  // Suffix broadcasts on either side take a fast path; the general path
  // handles the rest. All must equal broadcasting explicitly first.
  Tensor a = random({2, 3, 4}, 11), bias = random({3, 4}, 12), row = random({4}, 13);
  Tensor col = random({2, 1, 4}, 14), other = random({3, 1}, 15);
  auto check = [](const Tensor &x, const Tensor &y) {
    Shape shape = broadcastShapes(x.shape, y.shape);
    Tensor expected = binary(BinaryKind::Sub, broadcastTo(x, shape), broadcastTo(y, shape));
    expectNear(binary(BinaryKind::Sub, x, y), expected, 0);
  };
  check(a, bias);
  check(bias, a);
  check(row, a);
  check(a, row);
  check(col, other);
  check(a, make(DType::F32, {}, {2.0}));
}

TEST(Elementwise, IntegerSemantics) {
  Tensor a = make(DType::I32, {4}, {7, -7, 5, INT32_MIN});
  Tensor b = make(DType::I32, {4}, {2, 2, 0, -1});
  // Truncating division; x/0 is 0 rather than a trap; overflow wraps.
  EXPECT_EQ(binary(BinaryKind::Div, a, b).i, (std::vector<int64_t>{3, -3, 0, INT32_MIN}));
  Tensor c = make(DType::I8, {1}, {127});
  EXPECT_EQ(binary(BinaryKind::Add, c, make(DType::I8, {1}, {1})).i[0], -128);
}

TEST(Elementwise, UnaryValues) {
  Tensor x = make(DType::F64, {3}, {-1.0, 0.0, 2.0});
  expectNear(unary(UnaryKind::Relu, x), make(DType::F64, {3}, {0, 0, 2}), 0);
  expectNear(unary(UnaryKind::Sigmoid, x),
             make(DType::F64, {3}, {0.2689414213699951, 0.5, 0.8807970779778823}), 1e-12);
  expectNear(unary(UnaryKind::Gelu, x),
             make(DType::F64, {3}, {-0.15865525393145707, 0.0, 1.9544997361036416}), 1e-12);
}

TEST(Cast, FloatToIntTruncatesAndNarrowFloatsRound) {
  Tensor x = make(DType::F32, {4}, {1.9, -1.9, 300.0, 0.1});
  EXPECT_EQ(cast(x, DType::I32).i, (std::vector<int64_t>{1, -1, 300, 0}));
  EXPECT_EQ(cast(x, DType::I8).i[2], 44); // 300 wraps to 44 in i8
  EXPECT_EQ(cast(x, DType::I1).i, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(cast(x, DType::F16).f[3], static_cast<double>(halfToFloat(floatToHalf(0.1f))));
}

TEST(DataMovement, TransposeSliceConcatPad) {
  Tensor x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(transpose(x, {1, 0}), make(DType::F32, {3, 2}, {1, 4, 2, 5, 3, 6}), 0);
  // Reverse the columns with a negative step.
  expectNear(slice(x, {0, 2}, {2, -1}, {1, -1}),
             make(DType::F32, {2, 3}, {3, 2, 1, 6, 5, 4}), 0);
  expectNear(slice(x, {1, 0}, {2, 3}, {1, 2}), make(DType::F32, {1, 2}, {4, 6}), 0);
  Tensor y = make(DType::F32, {2, 1}, {7, 8});
  expectNear(concat({&x, &y}, 1), make(DType::F32, {2, 4}, {1, 2, 3, 7, 4, 5, 6, 8}), 0);
  expectNear(pad(y, {1, 0}, {0, 1}, -1.0),
             make(DType::F32, {3, 2}, {-1, -1, 7, -1, 8, -1}), 0);
}

TEST(DataMovement, GatherNegativeAndOutOfRangeIndices) {
  Tensor data = make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor indices = make(DType::I64, {2}, {-1, 0});
  expectNear(gather(data, indices, 0), make(DType::F32, {2, 2}, {5, 6, 1, 2}), 0);
  Tensor bad = make(DType::I64, {1}, {7});
  expectNear(gather(data, bad, 0), make(DType::F32, {1, 2}, {0, 0}), 0);
}

TEST(Reductions, SumMeanMaxArgmax) {
  Tensor x = make(DType::F32, {2, 3}, {1, 5, 3, 4, 2, 6});
  expectNear(reduce(ReduceKind::Sum, x, {1}, false), make(DType::F32, {2}, {9, 12}), 0);
  expectNear(reduce(ReduceKind::Mean, x, {0}, true), make(DType::F32, {1, 3}, {2.5, 3.5, 4.5}), 0);
  expectNear(reduce(ReduceKind::Max, x, {0, 1}, false), make(DType::F32, {}, {6}), 0);
  expectNear(reduce(ReduceKind::Prod, x, {1}, false), make(DType::F32, {2}, {15, 48}), 0);
  EXPECT_EQ(argmax(x, 1, false).i, (std::vector<int64_t>{1, 2}));
}

TEST(Reductions, SoftmaxRowsSumToOneAndLogSoftmaxAgrees) {
  Tensor x = random({4, 7}, 1, DType::F64);
  Tensor s = softmax(x, 1, false);
  Tensor ls = softmax(x, 1, true);
  for (int64_t r = 0; r < 4; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 7; ++c) {
      sum += s.f[r * 7 + c];
      EXPECT_NEAR(std::log(s.f[r * 7 + c]), ls.f[r * 7 + c], 1e-12);
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(Normalisation, LayerNormHasZeroMeanUnitVariance) {
  Tensor x = random({3, 16}, 2, DType::F64);
  Tensor scale = make(DType::F64, {16}, std::vector<double>(16, 1.0));
  Tensor y = layerNorm(x, scale, nullptr, 1, 0.0);
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < 16; ++c)
      mean += y.f[r * 16 + c] / 16;
    for (int64_t c = 0; c < 16; ++c)
      var += (y.f[r * 16 + c] - mean) * (y.f[r * 16 + c] - mean) / 16;
    EXPECT_NEAR(mean, 0.0, 1e-12);
    EXPECT_NEAR(var, 1.0, 1e-9);
  }
}

TEST(Normalisation, BatchNormMatchesFormula) {
  Tensor x = random({2, 3, 2, 2}, 3, DType::F64);
  Tensor scale = make(DType::F64, {3}, {1, 2, 3}), bias = make(DType::F64, {3}, {0, 1, -1});
  Tensor mean = make(DType::F64, {3}, {0.1, 0.2, 0.3}), var = make(DType::F64, {3}, {1, 4, 9});
  Tensor y = batchNorm(x, scale, bias, mean, var, 0.0);
  for (int64_t k = 0; k < y.numElements(); ++k) {
    int64_t c = (k / 4) % 3;
    EXPECT_NEAR(y.f[k], (x.f[k] - mean.f[c]) / std::sqrt(var.f[c]) * scale.f[c] + bias.f[c], 1e-12);
  }
}

TEST(Contractions, TransposeFlagsEqualExplicitTransposes) {
  Tensor a = random({2, 4, 3}, 4), b = random({5, 4}, 5);
  Tensor reference = matmul(transpose(a, {0, 2, 1}), transpose(b, {1, 0}), false, false);
  expectNear(matmul(a, b, true, true), reference, 1e-6);
  EXPECT_EQ(reference.shape, (Shape{2, 3, 5}));
}

TEST(Contractions, MatmulHandComputed) {
  Tensor a = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  Tensor b = make(DType::F32, {2, 2}, {5, 6, 7, 8});
  expectNear(matmul(a, b, false, false), make(DType::F32, {2, 2}, {19, 22, 43, 50}), 0);
}

TEST(Contractions, PointwiseConvolutionIsAMatmul) {
  Tensor x = random({1, 3, 4, 5}, 6), w = random({2, 3, 1, 1}, 7);
  Tensor y = conv2d(x, w, nullptr, Conv2dParams{});
  // [O, C] x [C, H*W]
  Tensor expected = matmul(reshape(w, {2, 3}), reshape(x, {3, 20}), false, false);
  expectNear(y, reshape(expected, {1, 2, 4, 5}), 1e-6);
}

TEST(Contractions, PaddedStridedGroupedConvolution) {
  // One 3x3 all-ones filter per group, stride 2, padding 1: each output is
  // the sum of the in-bounds 3x3 window of its own channel.
  Tensor x = make(DType::F32, {1, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1,
                                             2, 2, 2, 2, 2, 2, 2, 2, 2});
  Tensor w = make(DType::F32, {2, 1, 3, 3}, std::vector<double>(18, 1.0));
  Conv2dParams p;
  p.strides[0] = p.strides[1] = 2;
  p.padding[0] = p.padding[1] = p.padding[2] = p.padding[3] = 1;
  p.groups = 2;
  expectNear(conv2d(x, w, nullptr, p),
             make(DType::F32, {1, 2, 2, 2}, {4, 4, 4, 4, 8, 8, 8, 8}), 0);
}

TEST(Pooling, CeilModeAndPaddingCounts) {
  Tensor x = make(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 2;
  p.strides[0] = p.strides[1] = 2;
  p.ceilMode = true;
  expectNear(maxPool2d(x, p), make(DType::F32, {1, 1, 2, 2}, {5, 6, 8, 9}), 0);
  expectNear(avgPool2d(x, p), make(DType::F32, {1, 1, 2, 2}, {3, 4.5, 7.5, 9}), 0);
  expectNear(globalAvgPool(x), make(DType::F32, {1, 1, 1, 1}, {5}), 0);
  EXPECT_EQ(windowOutputSize(3, 0, 0, 2, 2, 1, false), 1);
  EXPECT_EQ(windowOutputSize(3, 0, 0, 2, 2, 1, true), 2);
}

} // namespace

namespace {
TEST(DataMovement, GatherElementsPicksPerElement) {
  // ONNX's example: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]], axis 1.
  Tensor data = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  Tensor indices = make(DType::I64, {2, 2}, {0, 0, 1, 0});
  expectNear(gatherElements(data, indices, 1), make(DType::F32, {2, 2}, {1, 1, 4, 3}), 0);
  // Axis 0, negative index, fewer rows than the data.
  Tensor rows = make(DType::I64, {1, 2}, {-1, 0});
  expectNear(gatherElements(data, rows, 0), make(DType::F32, {1, 2}, {3, 2}), 0);
}
} // namespace

namespace {
TEST(Pooling, DilatedWindowsSkipElements) {
  // 4x4 ramp, 2x2 kernel with dilation 2: window (0,0) covers 0, 2, 8, 10.
  std::vector<double> ramp(16);
  for (int k = 0; k < 16; ++k)
    ramp[k] = k;
  Tensor x = make(DType::F32, {1, 1, 4, 4}, ramp);
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 2;
  p.dilations[0] = p.dilations[1] = 2;
  expectNear(maxPool2d(x, p), make(DType::F32, {1, 1, 2, 2}, {10, 11, 14, 15}), 0);
  expectNear(avgPool2d(x, p), make(DType::F32, {1, 1, 2, 2}, {5, 6, 9, 10}), 0);
}
} // namespace

// checkOp is what keeps a hostile executable from driving these kernels out
// of bounds; the element-wise index ops share one rule set.
TEST(OpCheck, ElementIndexOpsRejectIndicesThatDoNotFit) {
  OpAttrs axis1;
  axis1["axis"].i = 1;
  TensorInfo data{DType::F32, {3, 4}}, idx{DType::I64, {3, 2}};
  EXPECT_EQ(checkOp("kiln.gather_elements", axis1, {data, idx}, {{DType::F32, {3, 2}}}), "");
  EXPECT_EQ(checkOp("kiln.scatter_elements", axis1, {data, idx, {DType::F32, {3, 2}}}, {data}),
            "");

  std::vector<std::pair<std::vector<TensorInfo>, std::string>> bad = {
      {{data, {DType::F32, {3, 2}}}, "indices must be i32 or i64"},
      {{data, {DType::I64, {6}}}, "indices must have the data's rank"},
      {{data, {DType::I64, {4, 2}}}, "indices exceed the data outside the axis"},
  };
  for (const auto &[operands, message] : bad) {
    std::string gather = checkOp("kiln.gather_elements", axis1, operands, {});
    EXPECT_NE(gather.find(message), std::string::npos) << gather;
    std::vector<TensorInfo> withUpdates = operands;
    withUpdates.push_back({DType::F32, operands[1].shape});
    std::string scatter = checkOp("kiln.scatter_elements", axis1, withUpdates, {data});
    EXPECT_NE(scatter.find(message), std::string::npos) << scatter;
  }
  OpAttrs axis2;
  axis2["axis"].i = 2;
  EXPECT_NE(checkOp("kiln.gather_elements", axis2, {data, idx}, {}).find("out of range"),
            std::string::npos);
  EXPECT_NE(checkOp("kiln.scatter_elements", axis1, {data, idx, {DType::F32, {3, 3}}}, {data})
                .find("updates must match"),
            std::string::npos);
}

TEST(Reductions, ReduceF32MatchesTheReferenceBitForBit) {
  // reduceF32 folds each output's inputs in double in reduce's order: bit
  // for bit for every kind, over one axis or consecutive ones, with a NaN
  // (sticky for max and min) and rows enough to be split over threads;
  // axes that are not consecutive are left to reduce.
  Shape shape{4, 130, 6, 5};
  std::vector<float> xf;
  Tensor x = randomF32(shape, xf, 9, 3.0f, /*nanEvery=*/1 << 20); // one NaN
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max, ReduceKind::Min,
                          ReduceKind::Prod})
    for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {2, 3}, {0}, {3}, {1, 2, 3}}) {
      Tensor expected = reduce(kind, x, axes, /*keepdims=*/false);
      std::vector<float> got(expected.f.size() + 1, 12345.0f); // one past: not written
      ASSERT_TRUE(reduceF32(kind, xf.data(), shape, axes, got.data()));
      std::string what = "kind " + std::to_string(static_cast<int>(kind)) + " axes " +
                         std::to_string(axes.front()) + ".." + std::to_string(axes.back());
      expectSameBits(expected, got, what.c_str());
    }
  std::vector<float> unused(4 * 6);
  EXPECT_FALSE(reduceF32(ReduceKind::Sum, xf.data(), shape, {1, 3}, unused.data()));
}

TEST(Pooling, GlobalAvgPoolF32MatchesTheReferenceBitForBit) {
  // Each plane summed in double over its f32 elements and rounded once, as
  // globalAvgPool does over the same values: bit for bit, over rank 3 to
  // 5, one-element planes and planes enough to be split over threads.
  for (Shape shape : {Shape{2, 3, 7}, Shape{1, 1, 1, 1}, Shape{8, 128, 8, 8}, Shape{2, 5, 3, 4, 6}}) {
    std::vector<float> xf;
    Tensor x = randomF32(shape, xf, 5, 4.0f, /*nanEvery=*/0);
    Tensor expected = globalAvgPool(x);
    std::vector<float> got(expected.f.size() + 1, 12345.0f); // one past: not written
    globalAvgPoolF32(xf.data(), shape, got.data());
    expectSameBits(expected, got, (std::to_string(shape.size()) + "-d").c_str());
  }
}

namespace {

/// Max pooling windows the f32 paths specialise (2x2/2, 3x3/2, 3x3/1: whole
/// planes' columns at once) and others, with padding, ceil mode, planes
/// narrower than the window and NaN, each against maxPool2d bit for bit;
/// and NHWC max pooling and global average pooling against the same on
/// the transposed input.
struct PoolCase {
  Shape shape;
  Pool2dParams params;
};

std::vector<PoolCase> maxPoolCases() {
  auto params = [](int64_t k, int64_t s, int64_t pad, bool ceil = false) {
    Pool2dParams p;
    p.kernel[0] = p.kernel[1] = k;
    p.strides[0] = p.strides[1] = s;
    p.padding[0] = p.padding[1] = p.padding[2] = p.padding[3] = pad;
    p.ceilMode = ceil;
    return p;
  };
  // ONNX's SAME_UPPER for 3x3/2 on 2x2: padding only after (the last window
  // ends past the row, the first starts inside it).
  Pool2dParams sameUpper = params(3, 2, 0);
  sameUpper.padding[2] = sameUpper.padding[3] = 1;
  return {{{1, 64, 112, 112}, params(3, 2, 1)}, {{8, 3, 32, 32}, params(2, 2, 0)},
          {{1, 3, 2, 2}, sameUpper}, {{2, 2, 6, 6}, sameUpper},
          {{2, 5, 9, 9}, params(3, 1, 1)},      {{1, 2, 1, 2}, params(2, 2, 0)},
          {{2, 3, 7, 7}, params(3, 2, 1, true)}, {{1, 4, 10, 10}, params(3, 2, 0)},
          {{1, 2, 8, 8}, params(2, 2, 1)},      {{3, 2, 11, 6}, params(5, 3, 2)}};
}

} // namespace

TEST(Pooling, MaxPoolF32MatchesTheReferenceBitForBit) {
  for (const PoolCase &c : maxPoolCases()) {
    std::vector<float> xf;
    Tensor x = randomF32(c.shape, xf, 9);
    Tensor expected = maxPool2d(x, c.params);
    std::vector<float> got(expected.f.size() + 1, 12345.0f);
    pool2dF32(true, xf.data(), c.shape, c.params, got.data());
    expectSameBits(expected, got, "nchw");
  }
}

TEST(Pooling, NhwcPoolsMatchTheReferenceBitForBit) {
  for (const PoolCase &c : maxPoolCases()) {
    std::vector<float> xf;
    Tensor x = randomF32(c.shape, xf, 11);
    // The input stored NHWC; the result compared after transposing back.
    Shape nhwc = {c.shape[0], c.shape[2], c.shape[3], c.shape[1]};
    std::vector<float> stored(xf.size());
    transposeF32(xf.data(), c.shape, {0, 2, 3, 1}, stored.data());
    Tensor expected = maxPool2d(x, c.params);
    std::vector<float> gotNhwc(expected.f.size() + 1, 12345.0f);
    maxPool2dNhwcF32(stored.data(), nhwc, c.params, gotNhwc.data());
    const Shape &out = expected.shape;
    std::vector<float> got(expected.f.size() + 1, 12345.0f);
    transposeF32(gotNhwc.data(), {out[0], out[2], out[3], out[1]}, {0, 3, 1, 2}, got.data());
    expectSameBits(expected, got, "nhwc max");
    EXPECT_EQ(gotNhwc.back(), 12345.0f);
    Tensor averaged = globalAvgPool(x);
    std::vector<float> gotAverage(averaged.f.size() + 1, 12345.0f);
    globalAvgPoolNhwcF32(stored.data(), nhwc[0], nhwc[1] * nhwc[2], nhwc[3], gotAverage.data());
    expectSameBits(averaged, gotAverage, "nhwc average");
  }
}

TEST(DataMovement, TransposeF32MatchesTheReference) {
  // Batches of 2-D transposes (NCHW <-> NHWC, tiled), dimensions of size 1
  // merged away, and the general case, against ref::transpose.
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Case &c : std::vector<Case>{{{2, 6, 15, 15}, {0, 2, 3, 1}},
                                         {{2, 15, 15, 6}, {0, 3, 1, 2}},
                                         {{1, 40, 33}, {0, 2, 1}},
                                         {{70, 35}, {1, 0}},
                                         {{1, 128, 1, 1}, {0, 2, 3, 1}},
                                         {{2, 3, 4, 5}, {2, 0, 3, 1}},
                                         {{3, 1, 4}, {1, 0, 2}}}) {
    std::vector<float> xf;
    Tensor x = randomF32(c.shape, xf, 3);
    Tensor expected = transpose(x, c.perm);
    std::vector<float> got(expected.f.size() + 1, 12345.0f);
    transposeF32(xf.data(), c.shape, c.perm, got.data());
    expectSameBits(expected, got, "transpose");
  }
}

TEST(DataMovement, ConcatAndPadF32MatchTheReference) {
  // Concatenation along the first, a middle and the last axis, one input
  // empty along it; constant padding with negative (cropping) and zero
  // amounts, a rank-1 and a rank-4 tensor, and rows enough to split.
  std::vector<float> af, bf, cf;
  Tensor a = randomF32({3, 4, 5}, af, 1), b = randomF32({3, 2, 5}, bf, 2),
         c = randomF32({3, 0, 5}, cf, 3);
  for (int64_t axis : {1}) {
    Tensor expected = concat({&a, &b, &c}, axis);
    std::vector<float> got(expected.f.size() + 1, 12345.0f);
    concatF32({af.data(), bf.data(), cf.data()}, {&a.shape, &b.shape, &c.shape}, axis, got.data());
    expectSameBits(expected, got, "concat middle");
  }
  for (int64_t axis : {0, 2}) {
    Tensor expected = concat({&a, &a}, axis);
    std::vector<float> got(expected.f.size() + 1, 12345.0f);
    concatF32({af.data(), af.data()}, {&a.shape, &a.shape}, axis, got.data());
    expectSameBits(expected, got, "concat");
  }
  struct PadCase {
    Shape shape;
    std::vector<int64_t> low, high;
  };
  for (const PadCase &p : std::vector<PadCase>{{{7}, {2}, {3}},
                                               {{2, 3, 9, 9}, {0, 1, 2, 2}, {1, 0, 2, 2}},
                                               {{3, 8}, {-1, 2}, {1, -3}},
                                               {{2, 40, 64}, {0, 0, 0}, {0, 0, 0}},
                                               {{4, 5}, {0, -2}, {0, -3}}}) {
    std::vector<float> xf;
    Tensor x = randomF32(p.shape, xf, 7);
    Tensor expected = pad(x, p.low, p.high, 0.3);
    std::vector<float> got(expected.f.size() + 1, 12345.0f);
    padF32(xf.data(), p.shape, p.low, p.high, 0.3, got.data());
    expectSameBits(expected, got, "pad");
  }
}

TEST(DataMovement, SliceF32CopiesRowsAsTheReferenceSlices) {
  // sliceF32 copies whole rows (contiguous when the last axis steps by 1);
  // ref::slice walks every element. Bit for bit, over rank 1 to 4, negative
  // and non-unit steps on any axis, an empty result, and rows enough to be
  // split over threads.
  struct Case {
    Shape shape;
    std::vector<int64_t> starts, ends, steps;
  };
  std::vector<Case> cases = {
      {{10}, {2}, {9}, {1}},
      {{10}, {8}, {-1}, {-3}},
      {{6, 9}, {1, 7}, {5, 0}, {2, -2}},
      {{3, 4, 5, 6}, {0, 3, 1, 0}, {3, 0, 5, 6}, {1, -1, 2, 1}},
      {{2, 3, 4, 5}, {1, 0, 3, 4}, {2, 3, 0, 1}, {1, 1, -1, -1}},
      {{4, 5}, {2, 0}, {2, 5}, {1, 1}}, // empty
      {{512, 300}, {7, 10}, {500, 290}, {1, 1}},
  };
  for (const Case &c : cases) {
    Tensor x = Tensor::zeros(DType::F32, c.shape);
    std::vector<float> xf(x.f.size());
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (size_t k = 0; k < xf.size(); ++k)
      x.f[k] = xf[k] = dist(rng);
    Tensor expected = slice(x, c.starts, c.ends, c.steps);
    std::vector<float> got(expected.f.size() + 1, 12345.0f); // one past: not written
    sliceF32(xf.data(), c.shape, c.starts, c.ends, c.steps, got.data());
    for (size_t k = 0; k < expected.f.size(); ++k) {
      float want = static_cast<float>(expected.f[k]);
      ASSERT_EQ(0, std::memcmp(&got[k], &want, 4)) << "case " << (&c - cases.data()) << " @" << k;
    }
    EXPECT_EQ(got.back(), 12345.0f);
  }
}
