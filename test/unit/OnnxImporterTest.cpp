//===- OnnxImporterTest.cpp - the ONNX frontend ---------------------------===//
//
// Models are built here with the protobuf API, written to a temporary file
// and imported; malformed ones must produce one clear error and no crash.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/OnnxImporter.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

#include <onnx/onnx_pb.h>

#include <fstream>

using namespace mlir;
using namespace mlir::kiln;

namespace {

class OnnxImporterTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("onnx-test", dir));
    directory = dir.str().str();
    model.set_ir_version(8);
    auto *opset = model.add_opset_import();
    opset->set_version(13);
    graph()->set_name("g");
  }
  void TearDown() override { llvm::sys::fs::remove_directories(directory); }

  onnx::GraphProto *graph() { return model.mutable_graph(); }

  void input(const std::string &name, std::vector<int64_t> dims,
             int type = onnx::TensorProto::FLOAT, const std::string &param = "") {
    auto *in = graph()->add_input();
    in->set_name(name);
    auto *t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims)
      t->mutable_shape()->add_dim()->set_dim_value(d);
    if (!param.empty())
      t->mutable_shape()->add_dim()->set_dim_param(param);
  }
  void output(const std::string &name) { graph()->add_output()->set_name(name); }
  onnx::NodeProto *node(const std::string &op, std::vector<std::string> ins,
                        std::vector<std::string> outs, const std::string &name = "") {
    auto *n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto &i : ins)
      n->add_input(i);
    for (auto &o : outs)
      n->add_output(o);
    return n;
  }
  void initializer(const std::string &name, std::vector<int64_t> dims, std::vector<float> data) {
    auto *t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float v : data)
      t->add_float_data(v);
  }

  /// Imports the model (or raw bytes), collecting diagnostics.
  OwningOpRef<ModuleOp> import(const std::string *bytes = nullptr,
                               ::kiln::frontend::OnnxImportOptions options = {}) {
    std::string path = directory + "/model.onnx";
    {
      std::ofstream out(path, std::ios::binary);
      if (bytes)
        out << *bytes;
      else
        model.SerializeToOstream(&out);
    }
    errors.clear();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      std::string where;
      if (auto name = llvm::dyn_cast<NameLoc>(d.getLocation()))
        where = name.getName().str() + ": ";
      errors.push_back(where + d.str());
      return success();
    });
    return ::kiln::frontend::importOnnxFile(path, &context, options);
  }

  std::string firstError() const { return errors.empty() ? "" : errors.front(); }

  MLIRContext context;
  onnx::ModelProto model;
  std::string directory;
  std::vector<std::string> errors;
};

TEST_F(OnnxImporterTest, ImportsInputsInitializersAndNodes) {
  input("x", {2, 3});
  initializer("w", {3}, {1, 2, 3});
  node("Add", {"x", "w"}, {"y"}, "add0");
  node("Relu", {"y"}, {"z"});
  output("z");
  OwningOpRef<ModuleOp> module = import();
  ASSERT_TRUE(module) << firstError();
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(func.getName(), "g");
  EXPECT_EQ(func.getNumArguments(), 1u);
  EXPECT_EQ(func.getArgAttrOfType<StringAttr>(0, "kiln.name").getValue(), "x");
  WeightOp w = *func.getOps<WeightOp>().begin();
  EXPECT_EQ(w.getName(), "w");
  AddOp add = *func.getOps<AddOp>().begin();
  auto loc = llvm::dyn_cast<NameLoc>(add.getLoc());
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc.getName().str(), "node 'add0' (Add)");
}

TEST_F(OnnxImporterTest, RejectsTruncatedProtobuf) {
  input("x", {2});
  node("Relu", {"x"}, {"y"});
  output("y");
  std::string bytes = model.SerializeAsString();
  for (size_t cut : {size_t(1), bytes.size() / 2, bytes.size() - 1}) {
    std::string truncated = bytes.substr(0, cut);
    EXPECT_FALSE(import(&truncated)) << cut;
    EXPECT_NE(firstError().find("not a valid ONNX model"), std::string::npos) << firstError();
  }
}

TEST_F(OnnxImporterTest, RejectsDanglingInputsAndCycles) {
  input("x", {2});
  node("Add", {"x", "missing"}, {"y"}, "uses_missing");
  output("y");
  EXPECT_FALSE(import());
  EXPECT_EQ(firstError(), "node 'uses_missing' (Add): uses 'missing', which no earlier node, "
                          "input or initializer defines");

  // A cycle: each node reads the other's output.
  graph()->clear_node();
  graph()->clear_output();
  node("Relu", {"b"}, {"a"}, "first");
  node("Relu", {"a"}, {"b"}, "second");
  output("b");
  EXPECT_FALSE(import());
  EXPECT_EQ(firstError(), "node 'first' (Relu): uses 'b', which no earlier node, input or "
                          "initializer defines");
}

TEST_F(OnnxImporterTest, RejectsWrongAttributeTypes) {
  input("x", {2, 3});
  auto *n = node("Softmax", {"x"}, {"y"}, "sm");
  auto *axis = n->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::STRING);
  axis->set_s("last");
  output("y");
  EXPECT_FALSE(import());
  EXPECT_EQ(firstError(), "node 'sm' (Softmax): attribute 'axis' must be INT, not STRING");
}

TEST_F(OnnxImporterTest, RejectsAbsurdDimensionsAndShortInitializers) {
  input("x", {1000000000, 1000000000, 1000000000});
  node("Relu", {"x"}, {"y"});
  output("y");
  EXPECT_FALSE(import());
  EXPECT_NE(firstError().find("input 'x' has an invalid shape"), std::string::npos) << firstError();

  graph()->clear_input();
  input("x", {3});
  initializer("w", {3}, {1, 2}); // two values for three elements
  graph()->mutable_node(0)->set_op_type("Add");
  graph()->mutable_node(0)->add_input("w");
  EXPECT_FALSE(import());
  EXPECT_NE(firstError().find("initializer tensor 'w' holds 2 values for shape of 3 elements"),
            std::string::npos)
      << firstError();
}

TEST_F(OnnxImporterTest, ListsEveryUnsupportedNodeAtOnce) {
  input("x", {2, 3});
  node("Frobnicate", {"x"}, {"a"}, "f1");
  node("Relu", {"a"}, {"b"}); // depends on an unsupported node: not listed
  node("Twiddle", {"x"}, {"c"}, "f2");
  node("Add", {"b", "c"}, {"y"});
  output("y");
  EXPECT_FALSE(import());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(firstError().find("2 nodes cannot be compiled:\n"
                              "  node 'f1' (Frobnicate, opset 13): no converter for this op\n"
                              "  node 'f2' (Twiddle, opset 13): no converter for this op"),
            std::string::npos)
      << firstError();
}

TEST_F(OnnxImporterTest, UnknownDimensionsNeedAPin) {
  input("x", {3}, onnx::TensorProto::FLOAT, "batch");
  node("Relu", {"x"}, {"y"});
  output("y");
  EXPECT_FALSE(import());
  EXPECT_NE(firstError().find("input 'x' dimension 1 ('batch') is unknown; pin it with "
                              "--input-shape x=D0xD1x..."),
            std::string::npos)
      << firstError();
  ::kiln::frontend::OnnxImportOptions options;
  options.inputShapes["x"] = {{3, 3, 3}, {8, 8, 8}};
  OwningOpRef<ModuleOp> module = import(nullptr, options);
  ASSERT_TRUE(module) << firstError();
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(llvm::cast<RankedTensorType>(func.getArgument(0).getType()).getShape(),
            (ArrayRef<int64_t>{3, 8}));
  options.inputShapes["nope"] = {{1, 1, 1}};
  EXPECT_FALSE(import(nullptr, options));
  EXPECT_NE(firstError().find("--input-shape names 'nope', which is not an input"), std::string::npos);
}

/// Adds an input of shape [param, dims...].
static void dynamicInput(onnx::GraphProto *graph, const std::string &name,
                         const std::string &param, std::vector<int64_t> dims,
                         int type = onnx::TensorProto::FLOAT) {
  auto *t = graph->add_input();
  t->set_name(name);
  auto *tensor = t->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  tensor->mutable_shape()->add_dim()->set_dim_param(param);
  for (int64_t d : dims)
    tensor->mutable_shape()->add_dim()->set_dim_value(d);
}

static std::vector<::kiln::frontend::DimSpec> spec(const std::string &text) {
  std::vector<::kiln::frontend::DimSpec> dims;
  std::string error;
  EXPECT_TRUE(::kiln::frontend::parseShapeSpec(text, dims, error)) << text << ": " << error;
  return dims;
}

TEST_F(OnnxImporterTest, ShapeSpecsTakeSizesAndRanges) {
  std::vector<::kiln::frontend::DimSpec> dims = spec("1..8x128x1..512:128");
  ASSERT_EQ(dims.size(), 3u);
  EXPECT_EQ(dims[0].min, 1);
  EXPECT_EQ(dims[0].max, 8);
  EXPECT_EQ(dims[0].opt, 8); // OPT defaults to MAX
  EXPECT_TRUE(dims[1].isStatic());
  EXPECT_EQ(dims[1].min, 128);
  EXPECT_EQ(dims[2].opt, 128);
  for (const char *bad : {"", "x", "8..1", "1..8:9", "1..8:0", "3:4", "-1", "1..", "a", "1..8x"}) {
    std::string error;
    EXPECT_FALSE(::kiln::frontend::parseShapeSpec(bad, dims, error)) << bad;
  }
}

TEST_F(OnnxImporterTest, DynamicDimensionsBecomeSizeSymbols) {
  // One dim_param on two inputs is one symbol; a range on either names it.
  dynamicInput(graph(), "x", "batch", {4});
  dynamicInput(graph(), "m", "batch", {4});
  node("Add", {"x", "m"}, {"y"});
  output("y");
  ::kiln::frontend::OnnxImportOptions options;
  options.inputShapes["x"] = spec("1..8:2x4");
  OwningOpRef<ModuleOp> module = import(nullptr, options);
  ASSERT_TRUE(module) << firstError();
  auto func = *module->getOps<func::FuncOp>().begin();
  for (Type type : func.getArgumentTypes()) {
    auto tensor = llvm::cast<RankedTensorType>(type);
    EXPECT_TRUE(tensor.isDynamicDim(0));
    ASSERT_EQ(getEncoding(tensor).getSizes().size(), 1u);
    EXPECT_EQ(getEncoding(tensor).getSizes()[0], getAffineSymbolExpr(0, &context));
  }
  SmallVector<SizeSymbol> symbols = getSizeSymbols(func);
  ASSERT_EQ(symbols.size(), 1u);
  EXPECT_EQ(symbols[0].name, "batch");
  EXPECT_EQ(symbols[0].min, 1);
  EXPECT_EQ(symbols[0].max, 8);
  EXPECT_EQ(symbols[0].opt, 2);

  // Two different ranges for one dim_param: an error naming both.
  options.inputShapes["m"] = spec("1..4x4");
  EXPECT_FALSE(import(nullptr, options));
  EXPECT_NE(firstError().find("--input-shape gives 'batch' the range 1..8:2 at 'x' dimension 0 "
                              "but 1..4:4 at 'm' dimension 0"),
            std::string::npos)
      << firstError();
}

TEST_F(OnnxImporterTest, ShapeChainsOverDynamicSizesBecomeSymbolicTargets) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [2], [3])), as
  // exporters write x.view(x.size(0), 2, 3).
  dynamicInput(graph(), "x", "batch", {6});
  auto ints = [&](const std::string &name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    auto *t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims)
      t->add_dims(d);
    for (int64_t x : v)
      t->add_int64_data(x);
  };
  ints("zero", {}, {0});
  ints("axes", {1}, {0});
  ints("tail", {2}, {2, 3});
  node("Shape", {"x"}, {"s"});
  node("Gather", {"s", "zero"}, {"b"});
  node("Unsqueeze", {"b", "axes"}, {"b1"});
  onnx::AttributeProto *axis = node("Concat", {"b1", "tail"}, {"target"})->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  node("Reshape", {"x", "target"}, {"y"});
  output("y");
  ::kiln::frontend::OnnxImportOptions options;
  options.inputShapes["x"] = spec("1..8x6");
  OwningOpRef<ModuleOp> module = import(nullptr, options);
  ASSERT_TRUE(module) << firstError();
  auto func = *module->getOps<func::FuncOp>().begin();
  auto result = llvm::cast<RankedTensorType>(func.getResultTypes()[0]);
  SmallVector<AffineExpr> sizes = getDimSizes(result);
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[0], getAffineSymbolExpr(0, &context));
  EXPECT_EQ(sizes[1], getAffineConstantExpr(2, &context));
  EXPECT_EQ(sizes[2], getAffineConstantExpr(3, &context));
  // The shape computation left nothing behind: one reshape of the input.
  int ops = 0;
  func.walk([&](Operation *op) { ops += !llvm::isa<func::FuncOp, func::ReturnOp>(op); });
  EXPECT_EQ(ops, 1);
}

TEST_F(OnnxImporterTest, ASizeReadAsDataIsAnError) {
  // Shape(x) returned as an output: a dynamic size as data.
  dynamicInput(graph(), "x", "batch", {6});
  node("Shape", {"x"}, {"s"});
  output("s");
  ::kiln::frontend::OnnxImportOptions options;
  options.inputShapes["x"] = spec("1..8x6");
  EXPECT_FALSE(import(nullptr, options));
  EXPECT_NE(firstError().find("reads a size of a dynamic dimension as data"), std::string::npos)
      << firstError();
}

TEST_F(OnnxImporterTest, ShapeSubgraphsFoldToConstants) {
  // y = Reshape(x, Concat(Shape(x)[0:1], [-1])): a dynamic-looking target
  // that static shapes make constant.
  input("x", {2, 3, 4});
  node("Shape", {"x"}, {"s"});
  auto *slice = node("Slice", {"s", "start", "end"}, {"first"});
  (void)slice;
  initializer("dummy", {1}, {0});
  auto *start = graph()->add_initializer();
  start->set_name("start");
  start->set_data_type(onnx::TensorProto::INT64);
  start->add_dims(1);
  start->add_int64_data(0);
  auto *end = graph()->add_initializer();
  end->set_name("end");
  end->set_data_type(onnx::TensorProto::INT64);
  end->add_dims(1);
  end->add_int64_data(1);
  auto *minus = graph()->add_initializer();
  minus->set_name("minus_one");
  minus->set_data_type(onnx::TensorProto::INT64);
  minus->add_dims(1);
  minus->add_int64_data(-1);
  auto *concat = node("Concat", {"first", "minus_one"}, {"target"});
  auto *axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  node("Reshape", {"x", "target"}, {"y"});
  output("y");
  OwningOpRef<ModuleOp> module = import();
  ASSERT_TRUE(module) << firstError();
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(llvm::cast<RankedTensorType>(func.getResultTypes()[0]).getShape(),
            (ArrayRef<int64_t>{2, 12}));
}

} // namespace
