//===- OnnxImporterTest.cpp - the ONNX frontend ---------------------------===//
//
// Models are built here with the protobuf API, written to a temporary file
// and imported; malformed ones must produce one clear error and no crash.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/OnnxImporter.h"
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
  options.inputShapes["x"] = {3, 8};
  OwningOpRef<ModuleOp> module = import(nullptr, options);
  ASSERT_TRUE(module) << firstError();
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(llvm::cast<RankedTensorType>(func.getArgument(0).getType()).getShape(),
            (ArrayRef<int64_t>{3, 8}));
  options.inputShapes["nope"] = {1};
  EXPECT_FALSE(import(nullptr, options));
  EXPECT_NE(firstError().find("--input-shape names 'nope', which is not an input"), std::string::npos);
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
