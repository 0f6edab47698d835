//===- KgParserTest.cpp - the .kg frontend --------------------------------===//

#include "kiln/Frontend/KgParser.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/ReferenceConversion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <fstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Parses `source` as "model.kg", collecting diagnostics as "line:col: text".
struct Parsed {
  OwningOpRef<ModuleOp> module;
  std::vector<std::string> errors;
};

class KgParserTest : public ::testing::Test {
protected:
  Parsed parse(llvm::StringRef source, llvm::StringRef name = "model.kg") {
    Parsed result;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      std::string text;
      if (auto loc = llvm::dyn_cast<FileLineColLoc>(diag.getLocation()))
        text = std::to_string(loc.getLine()) + ":" + std::to_string(loc.getColumn()) + ": ";
      result.errors.push_back(text + diag.str());
      return success();
    });
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, name),
                                 llvm::SMLoc());
    result.module = ::kiln::frontend::parseKgModel(sourceMgr, &context);
    return result;
  }

  func::FuncOp onlyFunction(ModuleOp module) {
    auto funcs = module.getOps<func::FuncOp>();
    EXPECT_EQ(std::distance(funcs.begin(), funcs.end()), 1);
    return *funcs.begin();
  }

  MLIRContext context;
};

TEST_F(KgParserTest, BuildsAFunctionWithNamedInputsAndOutputs) {
  Parsed p = parse(R"(
model tiny
input x: f32[2, 3]
input y: f16[4] @cuda:1
weight w: f32[3, 5] = 0.5
z = relu(matmul(x, w))
output z, y
)");
  ASSERT_TRUE(p.module) << (p.errors.empty() ? "" : p.errors.front());
  func::FuncOp f = onlyFunction(*p.module);
  EXPECT_EQ(f.getName(), "tiny");
  ASSERT_EQ(f.getNumArguments(), 2u);
  EXPECT_EQ(f.getArgAttrOfType<StringAttr>(0, "kiln.name").getValue(), "x");
  EXPECT_EQ(getEncoding(f.getArgument(1).getType()).getDeviceString(), "cuda:1");
  ASSERT_EQ(f.getNumResults(), 2u);
  EXPECT_EQ(f.getResultAttrOfType<StringAttr>(0, "kiln.name").getValue(), "z");
  auto resultType = llvm::cast<RankedTensorType>(f.getResultTypes()[0]);
  EXPECT_EQ(resultType.getShape(), (ArrayRef<int64_t>{2, 5}));
}

TEST_F(KgParserTest, OpsCarryTheirFileLineColumn) {
  Parsed p = parse("input x: f32[4]\n\n   y = exp(x)\noutput y\n");
  ASSERT_TRUE(p.module);
  ExpOp exp = *onlyFunction(*p.module).getOps<ExpOp>().begin();
  auto loc = llvm::cast<FileLineColLoc>(exp.getLoc());
  EXPECT_EQ(loc.getFilename(), "model.kg");
  EXPECT_EQ(loc.getLine(), 3u);
  EXPECT_EQ(loc.getColumn(), 8u);
}

TEST_F(KgParserTest, InfixArithmeticHasUsualPrecedence) {
  // a + b * 2 - 1 == sub(add(a, mul(b, 2)), 1)
  Parsed p = parse("input a: f32[3]\ninput b: f32[3]\nc = a + b * 2 - 1\noutput c\n");
  ASSERT_TRUE(p.module);
  func::FuncOp f = onlyFunction(*p.module);
  auto ret = llvm::cast<func::ReturnOp>(f.getBody().front().getTerminator());
  auto sub = ret.getOperand(0).getDefiningOp<SubOp>();
  ASSERT_TRUE(sub);
  auto add = sub.getLhs().getDefiningOp<AddOp>();
  ASSERT_TRUE(add);
  EXPECT_TRUE(add.getRhs().getDefiningOp<MulOp>());
  // The bare numbers became rank-0 f32 constants on the CPU.
  auto one = sub.getRhs().getDefiningOp<ConstantOp>();
  ASSERT_TRUE(one);
  EXPECT_EQ(one.getType().getRank(), 0);
}

TEST_F(KgParserTest, LiteralListsFillRowMajor) {
  Parsed p = parse("weight w: i32[2, 2] = [[1, 2], [3, -4]]\ninput x: i32[2, 2]\ny = x + w\noutput y\n");
  ASSERT_TRUE(p.module) << (p.errors.empty() ? "" : p.errors.front());
  WeightOp w = *onlyFunction(*p.module).getOps<WeightOp>().begin();
  auto values = llvm::to_vector(llvm::cast<DenseElementsAttr>(w.getValue()).getValues<int32_t>());
  EXPECT_EQ(values, (SmallVector<int32_t>{1, 2, 3, -4}));
}

TEST_F(KgParserTest, RandomWeightsAreDeterministicAndSeeded) {
  const char *model = "weight w: f32[64] = random(seed=%d, scale=0.5)\ninput x: f32[64]\ny = x * w\noutput y\n";
  auto values = [&](int seed) {
    char text[200];
    std::snprintf(text, sizeof(text), model, seed);
    Parsed p = parse(text);
    EXPECT_TRUE(p.module);
    WeightOp w = *onlyFunction(*p.module).getOps<WeightOp>().begin();
    return llvm::to_vector(llvm::cast<DenseElementsAttr>(w.getValue()).getValues<float>());
  };
  SmallVector<float> a = values(7), b = values(7), c = values(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LT(v, 0.5f);
  }
  // Not a constant: the values spread over the range.
  EXPECT_GT(*std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end()), 0.5f);
}

TEST_F(KgParserTest, ReadsWeightsFromAFileAtAnOffset) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kg-test", dir));
  std::string binPath = (dir + "/w.bin").str();
  {
    std::ofstream out(binPath, std::ios::binary);
    float data[5] = {9.0f, 1.5f, -2.0f, 3.25f, 4.0f};
    out.write(reinterpret_cast<const char *>(data), sizeof(data));
  }
  std::string model = "weight w: f32[3] = file(\"w.bin\", offset=4)\ninput x: f32[3]\ny = x + w\noutput y\n";
  Parsed p = parse(model, (dir + "/m.kg").str());
  ASSERT_TRUE(p.module) << (p.errors.empty() ? "" : p.errors.front());
  WeightOp w = *onlyFunction(*p.module).getOps<WeightOp>().begin();
  auto values = llvm::to_vector(llvm::cast<DenseElementsAttr>(w.getValue()).getValues<float>());
  EXPECT_EQ(values, (SmallVector<float>{1.5f, -2.0f, 3.25f}));

  // Asking for more bytes than the file holds is an error at the file().
  Parsed short_ = parse("weight w: f32[8] = file(\"w.bin\")\ninput x: f32[8]\noutput x\n",
                        (dir + "/m.kg").str());
  EXPECT_FALSE(short_.module);
  ASSERT_EQ(short_.errors.size(), 1u);
  EXPECT_NE(short_.errors[0].find("1:20: weight file"), std::string::npos) << short_.errors[0];
  EXPECT_NE(short_.errors[0].find("has 20 bytes; 32 bytes are needed"), std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

TEST_F(KgParserTest, NegativeAxesAreNormalised) {
  Parsed p = parse("input x: f32[2, 3, 4]\ny = reduce_sum(x, axes=[-1, 0], keepdims=true)\noutput y\n");
  ASSERT_TRUE(p.module);
  ReduceSumOp r = *onlyFunction(*p.module).getOps<ReduceSumOp>().begin();
  EXPECT_EQ(r.getAxes(), (ArrayRef<int64_t>{0, 2}));
  EXPECT_EQ(r.getType().getShape(), (ArrayRef<int64_t>{1, 3, 1}));
}

TEST_F(KgParserTest, OnnxStyleSliceIsClampedToFullRank) {
  Parsed p = parse("input x: f32[4, 6]\ny = slice(x, starts=[-3], ends=[1000], axes=[1])\noutput y\n");
  ASSERT_TRUE(p.module) << (p.errors.empty() ? "" : p.errors.front());
  SliceOp s = *onlyFunction(*p.module).getOps<SliceOp>().begin();
  EXPECT_EQ(s.getStarts(), (ArrayRef<int64_t>{0, 3}));
  EXPECT_EQ(s.getEnds(), (ArrayRef<int64_t>{4, 6}));
  EXPECT_EQ(s.getType().getShape(), (ArrayRef<int64_t>{4, 3}));
}

struct BadModel {
  const char *source;
  const char *expected; ///< "line:col: message fragment"
};

class KgParserErrorTest : public KgParserTest,
                          public ::testing::WithParamInterface<BadModel> {};

TEST_P(KgParserErrorTest, ReportsOneErrorAtTheRightPlace) {
  Parsed p = parse(GetParam().source);
  EXPECT_FALSE(p.module);
  ASSERT_FALSE(p.errors.empty());
  EXPECT_NE(p.errors[0].find(GetParam().expected), std::string::npos)
      << "got: " << p.errors[0];
}

INSTANTIATE_TEST_SUITE_P(
    BadModels, KgParserErrorTest,
    ::testing::Values(
        BadModel{"input x: f32[2]\ny = nope(x)\noutput y", "2:5: unknown op 'nope'"},
        BadModel{"input x: f32[2]\ny = add(x)\noutput y", "2:5: add takes 2 operands, got 1"},
        BadModel{"input x: f32[2]\ny = relu(x, alpha=1)\noutput y", "2:13: unknown attribute 'alpha'"},
        BadModel{"input x: f32[2]\ny = relu(z)\noutput y", "2:10: 'z' is not defined"},
        BadModel{"input x: f32[2]\nx = relu(x)\noutput x", "2:1: 'x' is already defined at line 1:7"},
        BadModel{"input x: f32[2]\ninput y: f32[3]\nz = x + y\noutput z", "3:7: shapes [2] and [3] are not broadcast-compatible"},
        BadModel{"input x: f32[2]\ninput y: i32[2]\nz = x * y\noutput z", "3:7: operands have different element types"},
        BadModel{"input x: f32[2] @cuda:0\ninput y: f32[2]\nz = x - y\noutput z", "3:7: operand #1 is on cpu but operand #0 is on cuda:0"},
        BadModel{"input x: f32[2, 3]\ny = softmax(x, axis=2)\noutput y", "2:21: axis 2 is out of range for rank 2"},
        BadModel{"input x: f32[2, 3]\ny = reshape(x, shape=[4, 2])\noutput y", "2:5: reshape: [2x3] has 6 elements but [4x2] has 8"},
        BadModel{"input x: f32[2, 3]\ny = exp(x)\n", "the model has no 'output' statement"},
        BadModel{"input x: f33[2]\noutput x", "1:10: expected a dtype"},
        BadModel{"input x: f32[2] nhwc\noutput x", "1:17: layout 'nhwc' needs a 4-D tensor"},
        BadModel{"input x: f32[2] @tpu\noutput x", "1:18: unknown device 'tpu'"},
        BadModel{"weight w: f32[3] = [1, 2]\noutput w", "1:20: the list has 2 values but the type [3] holds 3"},
        BadModel{"weight w: i32[2] = [1, 2.5]\noutput w", "1:24: expected an integer for a i32 tensor"},
        BadModel{"weight w: i8[4] = -1.5\noutput w", "1:19: expected an integer for a i8 tensor"},
        BadModel{"input x: f32[2]\ny = x $ 2\noutput y", "2:7: unexpected character '$'"},
        BadModel{"input x: f32[2]\noutput q", "2:8: output 'q' is not defined"},
        BadModel{"input x: f32[2]\ny = 1 + 2\noutput y", "2:5: a bare number has no dtype"},
        BadModel{"input x: i32[2]\ny = x * 0.5\noutput y", "2:9: a non-integer number cannot be used with a i32 tensor"},
        BadModel{"input relu: f32[2]\noutput relu", "1:7: 'relu' is an op name"},
        BadModel{"input x: f32[1, 3, 8, 8]\nweight w: f32[4, 2, 3, 3] = 0\ny = conv2d(x, w)\noutput y", "3:5: conv2d input has 3 channels but filter expects 2 x 1 groups"},
        BadModel{"input x: f32[2]\ny = cast(x, to=f17)\noutput y", "2:16: attribute 'to' must be a dtype"},
        BadModel{"input x: f32[2]\ny = transfer(x, to=cuda:x)\noutput y", "2:25: expected a device number"}));

} // namespace

#include "KgOps.h"

#include <set>
#include <sstream>

namespace {

/// The op table in docs/kg-language.md lists every op the parser accepts,
/// and nothing else.
TEST(KgLanguageReference, DocumentsEveryOp) {
  std::ifstream doc(KILN_SOURCE_DIR "/docs/kg-language.md");
  ASSERT_TRUE(doc.good());
  std::set<std::string> documented;
  std::string line;
  bool inOps = false;
  while (std::getline(doc, line)) {
    if (line.rfind("## ", 0) == 0)
      inOps = line == "## Ops";
    if (!inOps || line.rfind("| `", 0) != 0)
      continue;
    size_t end = line.find('`', 3);
    std::string cell = line.substr(3, end - 3);
    for (char &c : cell)
      if (c == ',')
        c = ' ';
    std::istringstream words(cell);
    for (std::string word; words >> word;)
      documented.insert(word);
  }
  std::set<std::string> accepted;
  for (llvm::StringRef name : ::kiln::frontend::getKgOpNames())
    accepted.insert(name.str());
  for (const std::string &name : accepted)
    EXPECT_TRUE(documented.count(name)) << name << " is not documented";
  for (const std::string &name : documented)
    EXPECT_TRUE(accepted.count(name)) << name << " is documented but not an op";
  EXPECT_GT(accepted.size(), 50u);
}

} // namespace
