//===- TypeHelpersTest.cpp - kiln type and attribute helpers --------------===//

#include "kiln/IR/KilnOps.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

std::string print(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

TEST(ParseDevice, AcceptsCpuAndCudaOrdinals) {
  EXPECT_EQ(parseDevice("cpu")->first, DeviceKind::CPU);
  auto cuda = parseDevice("cuda:3");
  ASSERT_TRUE(cuda);
  EXPECT_EQ(cuda->first, DeviceKind::CUDA);
  EXPECT_EQ(cuda->second, 3);
}

TEST(ParseDevice, RejectsMalformedDevices) {
  for (const char *bad : {"gpu", "cuda", "cuda:", "cuda:-1", "cuda:x", "cuda:99999", ""})
    EXPECT_FALSE(parseDevice(bad)) << bad;
}

TEST(ParseLayout, NamedLayouts) {
  std::string error;
  EXPECT_TRUE(parseLayout("row_major", 3, error)->empty());
  EXPECT_TRUE(parseLayout("nchw", 4, error)->empty());
  EXPECT_EQ(*parseLayout("nhwc", 4, error), (SmallVector<int64_t>{0, 2, 3, 1}));
}

TEST(ParseLayout, PermutationsAndIdentityCanonicalisation) {
  std::string error;
  EXPECT_EQ(*parseLayout("perm[2, 0, 1]", 3, error), (SmallVector<int64_t>{2, 0, 1}));
  // The identity permutation is row-major and stored as such.
  EXPECT_TRUE(parseLayout("perm[0,1,2]", 3, error)->empty());
}

TEST(ParseLayout, ErrorsSayWhy) {
  std::string error;
  EXPECT_FALSE(parseLayout("nhwc", 3, error));
  EXPECT_NE(error.find("4-D"), std::string::npos) << error;
  EXPECT_FALSE(parseLayout("perm[0, 0]", 2, error));
  EXPECT_NE(error.find("permutation"), std::string::npos) << error;
  EXPECT_FALSE(parseLayout("perm[0, 1]", 3, error));
  EXPECT_FALSE(parseLayout("zigzag", 2, error));
  EXPECT_NE(error.find("unknown layout"), std::string::npos) << error;
}

TEST(BroadcastShapes, NumPyRules) {
  EXPECT_EQ(*broadcastShapes({2, 1, 4}, {3, 1}), (SmallVector<int64_t>{2, 3, 4}));
  EXPECT_EQ(*broadcastShapes({}, {5}), (SmallVector<int64_t>{5}));
  EXPECT_EQ(*broadcastShapes({0, 1}, {1, 7}), (SmallVector<int64_t>{0, 7}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {4, 3}));
}

TEST(IsValidDimOrder, ChecksPermutations) {
  EXPECT_TRUE(isValidDimOrder({}, 5));
  EXPECT_TRUE(isValidDimOrder({1, 0}, 2));
  EXPECT_FALSE(isValidDimOrder({1, 1}, 2));
  EXPECT_FALSE(isValidDimOrder({0, 2}, 2));
  EXPECT_FALSE(isValidDimOrder({0}, 2));
}

TEST(KilnTensorType, PrintsShapeDtypeLayoutAndDevice) {
  MLIRContext context;
  context.loadDialect<KilnDialect>();
  auto enc = TensorEncodingAttr::get(&context, {0, 2, 3, 1}, DeviceKind::CUDA, 1);
  RankedTensorType type =
      getKilnTensorType({1, 3, 8, 8}, Float16Type::get(&context), enc);
  EXPECT_TRUE(isKilnTensorType(type));
  EXPECT_EQ(print(type), "tensor<1x3x8x8xf16, #kiln.enc<nhwc, cuda:1>>");
  EXPECT_FALSE(isKilnTensorType(stripEncoding(type)));
  EXPECT_EQ(getEncoding(type).getDeviceString(), "cuda:1");
}

TEST(KilnTensorType, WithShapeResetsLayoutWhenRankChanges) {
  MLIRContext context;
  context.loadDialect<KilnDialect>();
  auto enc = TensorEncodingAttr::get(&context, {0, 2, 3, 1}, DeviceKind::CUDA, 0);
  RankedTensorType type = getKilnTensorType({1, 3, 8, 8}, Float32Type::get(&context), enc);
  RankedTensorType flat = withShape(type, {1, 192});
  EXPECT_TRUE(getEncoding(flat).isRowMajor());
  EXPECT_EQ(getEncoding(flat).getDeviceString(), "cuda:0");
  RankedTensorType same = withShape(type, {1, 3, 4, 16});
  EXPECT_EQ(getEncoding(same).getLayoutString(), "nhwc");
}

} // namespace
