//===- OnnxImporter.cpp - ONNX models to the Graph IR ---------------------===//
//
// Walks the graph's nodes in order (ONNX requires a topological order) and
// converts each with the converter registered for its op type. A node kiln
// cannot compile is recorded and its outputs poisoned, so one run reports
// every unsupported node; anything else wrong with the model is an error at
// once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/OnnxImporter.h"

#include "OnnxContext.h"

#include "kiln/Support/FileBytes.h"
#include "kiln/Support/OnnxTensorFile.h"

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

#include <onnx/defs/schema.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <functional>
#include <set>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {

namespace {

using namespace onnx_import;

const ConverterMap &converters() {
  static const ConverterMap map = [] {
    ConverterMap m;
    registerElementwiseConverters(m);
    registerShapeConverters(m);
    registerNeuralConverters(m);
    registerReductionConverters(m);
    registerCompositeConverters(m);
    registerResizeConverters(m);
    registerRecurrentConverters(m);
    registerGatherBasedConverters(m); // after the shape converters: extends Pad
    registerDataDependentConverters(m);
    return m;
  }();
  return map;
}

/// The newest default-domain opset whose op definitions the converters
/// follow (ONNX 1.18).
constexpr int64_t kNewestOpset = 23;

struct Unsupported {
  std::string node, opType, reason;
  int64_t opset;
};

/// The ONNX ops whose converters take inputs with dynamic dimensions: they
/// read no size of them, or read sizes symbolically.
static bool takesDynamicDimensions(const std::string &op) {
  static const std::set<std::string> ready = {
      // Elementwise.
      "Neg", "Abs", "Exp", "Log", "Sqrt", "Tanh", "Sigmoid", "Relu", "Erf", "Not", "Floor", "Ceil",
      "Round", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
      "Atanh", "Sign", "Add", "Sub", "Mul", "Div", "Equal", "Less", "LessOrEqual", "Greater",
      "GreaterOrEqual", "And", "Or", "Xor", "Min", "Max", "Sum", "Mean", "Pow", "Mod",
      "Reciprocal", "Where", "Identity", "Cast", "CastLike", "IsNaN", "Clip", "LeakyRelu", "Elu",
      "Selu", "Celu", "ThresholdedRelu", "HardSigmoid", "HardSwish", "Softplus", "Softsign",
      "Mish",
      // Contractions, convolution and pooling (a dynamic batch), normalisation.
      "MatMul", "Gemm", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      "BatchNormalization", "LayerNormalization", "Softmax", "LogSoftmax",
      // Reductions.
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin",
      // Shapes and data movement (ShapeOps.cpp, SymbolicSizeOps.cpp).
      "Shape", "Size", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat",
      "Gather", "Slice", "Split", "Expand", "ConstantOfShape"};
  return ready.count(op) != 0;
}

/// The name of a dynamic dimension: its dim_param, shared by every input
/// that declares it, or "input:d" when the model leaves it unnamed.
static std::string dimensionKey(const onnx::ValueInfoProto &info, int d) {
  if (info.type().has_tensor_type() && info.type().tensor_type().has_shape() &&
      d < info.type().tensor_type().shape().dim_size()) {
    const auto &dim = info.type().tensor_type().shape().dim(d);
    if (dim.has_dim_param() && !dim.dim_param().empty())
      return dim.dim_param();
  }
  return info.name() + ":" + std::to_string(d);
}

class Importer {
public:
  Importer(const std::string &path, MLIRContext *context, const OnnxImportOptions &options)
      : path(path), context(context), options(options), builder(context),
        base(FileLineColLoc::get(context, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run();
  /// Imports the model file's bytes (`path` names it in diagnostics).
  OwningOpRef<ModuleOp> run(const std::string &bytes);

private:
  LogicalResult fail(const Twine &message) {
    emitError(base) << message;
    return failure();
  }
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  FailureOr<Value> inputConstant(const onnx::ValueInfoProto &info, const std::string &path);
  LogicalResult convertNode(const onnx::NodeProto &node, size_t index);
  LogicalResult convertGradient(const onnx::NodeProto &node, Location loc,
                                const std::function<void()> &poison);

  std::string path;
  MLIRContext *context;
  const OnnxImportOptions &options;
  OpBuilder builder;
  Location base;
  int64_t opset = 1;
  LogicalResult collectSizeSymbols(const onnx::GraphProto &graph,
                                   const std::set<std::string> &initialized);
  LogicalResult checkSizeValuesUnused(Block *body);

  std::unordered_map<std::string, Value> values;
  /// Size symbols of dynamic dimensions, and which dim_param (or
  /// "input:dimension" when unnamed) each one is.
  SmallVector<SizeSymbol> symbols;
  std::map<std::string, unsigned> symbolOf;
  SymbolicInts symbolicInts;
  NodeContext::RunTimeSizes runTimeSizes{&symbols};
  std::set<std::string> poisoned;
  std::vector<Unsupported> unsupported;
};

FailureOr<RankedTensorType> Importer::inputType(const onnx::ValueInfoProto &info) {
  const std::string &name = info.name();
  if (!info.type().has_tensor_type())
    return fail("input '" + name + "' is not a tensor (sequence, map and optional inputs "
                "are not supported)");
  const onnx::TypeProto_Tensor &tensor = info.type().tensor_type();
  Type element = elementTypeOf(context, tensor.elem_type());
  if (!element)
    return fail("input '" + name + "' has unsupported type " + dataTypeName(tensor.elem_type()));
  auto pinned = options.inputShapes.find(name);
  SmallVector<AffineExpr> sizes;
  SmallVector<int64_t> staticDims;
  auto symbolFor = [&](int d) -> std::optional<unsigned> {
    auto it = symbolOf.find(dimensionKey(info, d));
    if (it == symbolOf.end())
      return std::nullopt;
    return it->second;
  };
  if (pinned != options.inputShapes.end()) {
    // The pin replaces the declared shape, rank included: models exported
    // with loose or wrong input declarations can still be compiled.
    for (size_t d = 0; d < pinned->second.size(); ++d) {
      const DimSpec &spec = pinned->second[d];
      if (spec.isStatic()) {
        sizes.push_back(getAffineConstantExpr(spec.min, context));
        staticDims.push_back(spec.min);
      } else {
        sizes.push_back(getAffineSymbolExpr(*symbolFor(d), context));
      }
    }
  } else {
    if (!tensor.has_shape())
      return fail("input '" + name + "' has no shape; pin it with --input-shape " + name +
                  "=D0xD1x...");
    for (int d = 0; d < tensor.shape().dim_size(); ++d) {
      const onnx::TensorShapeProto_Dimension &dim = tensor.shape().dim(d);
      if (std::optional<unsigned> symbol = symbolFor(d)) {
        sizes.push_back(getAffineSymbolExpr(*symbol, context));
        continue;
      }
      if (!dim.has_dim_value() || dim.dim_value() < 0)
        return fail("input '" + name + "' dimension " + Twine(d) +
                    (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : std::string()) +
                    " is unknown; pin it with --input-shape " + name +
                    "=D0xD1x... (a size, or a range MIN..MAX[:OPT])");
      sizes.push_back(getAffineConstantExpr(dim.dim_value(), context));
      staticDims.push_back(dim.dim_value());
    }
  }
  if (!withinElementLimit(staticDims))
    return fail("input '" + name + "' has an invalid shape");
  return getKilnTensorType(sizes, element, {}, getDefaultEncoding(context));
}

/// Every range given with --input-shape becomes a size symbol; a dim_param
/// names one symbol across inputs, so two ranges for it must agree.
LogicalResult Importer::collectSizeSymbols(const onnx::GraphProto &graph,
                                           const std::set<std::string> &initialized) {
  std::map<std::string, std::string> firstInput;
  std::map<std::string, std::pair<int64_t, std::string>> staticPins;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    auto pinned = options.inputShapes.find(input.name());
    if (initialized.count(input.name()) || pinned == options.inputShapes.end())
      continue;
    for (size_t d = 0; d < pinned->second.size(); ++d) {
      const DimSpec &spec = pinned->second[d];
      std::string key = dimensionKey(input, d);
      std::string where = "'" + input.name() + "' dimension " + std::to_string(d);
      if (spec.isStatic()) {
        staticPins.try_emplace(key, std::make_pair(spec.min, where));
        continue;
      }
      auto known = symbolOf.find(key);
      if (known != symbolOf.end()) {
        const SizeSymbol &s = symbols[known->second];
        if (s.min != spec.min || s.max != spec.max || s.opt != spec.opt)
          return fail("--input-shape gives '" + key + "' the range " + Twine(s.min) + ".." +
                      Twine(s.max) + ":" + Twine(s.opt) + " at " + firstInput[key] +
                      " but " + Twine(spec.min) + ".." + Twine(spec.max) + ":" +
                      Twine(spec.opt) + " at " + where);
        continue;
      }
      if (symbols.size() == kMaxSizeSymbols)
        return fail("more than " + Twine(kMaxSizeSymbols) + " dynamic dimensions");
      symbolOf[key] = symbols.size();
      firstInput[key] = where;
      symbols.push_back({key, spec.min, spec.max, spec.opt, {}});
    }
  }
  // One dim_param pinned to a size on one input and a range on another.
  for (const auto &[key, pin] : staticPins)
    if (auto known = symbolOf.find(key); known != symbolOf.end())
      return fail("--input-shape gives '" + key + "' the size " + Twine(pin.first) + " at " +
                  pin.second + " but the range " + Twine(symbols[known->second].min) + ".." +
                  Twine(symbols[known->second].max) + " at " + firstInput[key]);
  return success();
}

/// The size values must be unused once their consumers
/// have read them; one still used means a size became data (a Range's
/// length, a comparison), which kiln does not compute at run time yet.
LogicalResult Importer::checkSizeValuesUnused(Block *body) {
  // Nodes whose results nothing reads may hold the last uses (kiln ops
  // have no side effects).
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
      if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>()) {
        op.erase();
        erased = true;
      }
  }
  for (Operation &op : *body)
    if (llvm::isa<UnrealizedConversionCastOp>(op)) {
      Operation *user = *op.getResult(0).getUsers().begin();
      return emitError(user->getLoc())
             << "reads a size of a dynamic dimension as data, which kiln does not compute "
                "at run time yet; compile for one size with --input-shape NAME=D0xD1x...";
    }
  return success();
}

FailureOr<Value> Importer::inputConstant(const onnx::ValueInfoProto &info,
                                         const std::string &file) {
  npy::Array array;
  std::string name, error;
  bool isProto = llvm::StringRef(file).ends_with(".pb");
  if (!(isProto ? onnxpb::read(file, array, name, error) : npy::read(file, array, error)))
    return fail("--input-value " + info.name() + ": " + error);
  Type element = info.type().has_tensor_type()
                     ? elementTypeOf(context, info.type().tensor_type().elem_type())
                     : Type();
  std::optional<::kiln::ref::DType> dtype = element ? toReferenceDType(element) : std::nullopt;
  if (!dtype || *dtype != array.dtype)
    return fail("--input-value " + info.name() + ": the file's dtype does not match the input");
  auto type = RankedTensorType::get(array.shape, element);
  DenseElementsAttr value;
  if (element.isInteger(1)) {
    SmallVector<bool> bits(array.data.begin(), array.data.end());
    value = DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  } else if (array.data.empty()) {
    value = DenseElementsAttr::get(type, ArrayRef<Attribute>{});
  } else {
    value = DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(reinterpret_cast<const char *>(array.data.data()), array.data.size()));
  }
  auto encoded = RankedTensorType::get(array.shape, element, getDefaultEncoding(context));
  Location loc = NameLoc::get(StringAttr::get(context, "input '" + info.name() + "'"), base);
  return builder.create<ConstantOp>(loc, encoded, value).getResult();
}

LogicalResult Importer::convertNode(const onnx::NodeProto &node, size_t index) {
  std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  Location loc = NameLoc::get(StringAttr::get(context, "node '" + name + "' (" +
                                                           node.op_type() + ")"),
                              base);
  auto poison = [&] {
    for (const std::string &out : node.output())
      if (!out.empty())
        poisoned.insert(out);
  };
  if (node.domain() == "ai.onnx.preview.training" && node.op_type() == "Gradient")
    return convertGradient(node, loc, poison);
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    unsupported.push_back({name, node.op_type(), "domain '" + node.domain() + "' is not supported", opset});
    poison();
    return success();
  }
  SmallVector<Value> inputs;
  for (const std::string &in : node.input()) {
    if (in.empty()) {
      inputs.push_back(Value());
      continue;
    }
    auto it = values.find(in);
    if (it != values.end()) {
      inputs.push_back(it->second);
      continue;
    }
    if (poisoned.count(in)) {
      poison();
      return success();
    }
    emitError(loc) << "uses '" << in << "', which no earlier node, input or initializer defines";
    return failure();
  }
  // The operator's schema says how many inputs it takes and which may be
  // left out: converters rely on that, so a node breaking it is an error
  // here, not a null value inside a converter.
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
  if (!schema) {
    if (const onnx::OpSchema *later = onnx::OpSchemaRegistry::Schema(
            node.op_type(), static_cast<int>(kNewestOpset), ""))
      return emitError(loc) << node.op_type() << " exists from opset " << later->since_version()
                            << "; the model imports opset " << opset;
  }
  if (schema) {
    int given = node.input_size();
    if (given < schema->min_input() || given > schema->max_input())
      return emitError(loc) << "has " << given << " inputs; " << node.op_type() << " takes "
                            << schema->min_input() << " to " << schema->max_input();
    const auto &formal = schema->inputs();
    for (int k = 0; k < given && !formal.empty(); ++k) {
      const auto &param = formal[std::min<size_t>(k, formal.size() - 1)];
      if (node.input(k).empty() && param.GetOption() != onnx::OpSchema::Optional)
        return emitError(loc) << "leaves out input #" << k << " ('" << param.GetName()
                              << "'), which " << node.op_type() << " requires";
    }
  }
  auto converter = converters().find(node.op_type());
  if (converter == converters().end()) {
    unsupported.push_back({name, node.op_type(), "no converter for this op", opset});
    poison();
    return success();
  }
  // Converters name their results after the outputs: at least the
  // schema's least (every op kiln converts has one).
  int leastOutputs = schema ? std::max(1, schema->min_output()) : 1;
  if (node.output_size() < leastOutputs)
    return emitError(loc) << "has " << node.output_size() << " outputs; " << node.op_type()
                          << " gives at least " << leastOutputs;
  // Converters read their inputs' shapes; those written (and tested) for
  // dynamic dimensions are listed, the others refuse them by name.
  if (!symbols.empty() && !takesDynamicDimensions(node.op_type()))
    for (Value v : inputs)
      if (v && hasSymbolicSizes(v.getType())) {
        unsupported.push_back({name, node.op_type(),
                               "does not take dynamic dimensions yet (" +
                                   sizesString(getDimSizes(llvm::cast<RankedTensorType>(
                                       v.getType()))) + ")",
                               opset});
        poison();
        return success();
      }
  NodeContext ctx(builder, node, opset, loc, inputs);
  ctx.symbolic = &symbolicInts;
  ctx.sizeSymbols = symbols;
  ctx.runTime = &runTimeSizes;
  std::optional<LogicalResult> symbolicConversion = convertSymbolicSizes(ctx);
  LogicalResult converted =
      symbolicConversion ? *symbolicConversion : converter->second(ctx);
  if (!ctx.attrError.empty()) {
    emitError(loc) << ctx.attrError;
    return failure();
  }
  if (failed(converted)) {
    if (ctx.unsupported.empty())
      return failure(); // an error was reported at the node
    unsupported.push_back({name, node.op_type(), ctx.unsupported, opset});
    poison();
    return success();
  }
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string &out = node.output(k);
    if (out.empty())
      continue;
    if (static_cast<size_t>(k) >= ctx.results.size() || !ctx.results[k]) {
      unsupported.push_back({name, node.op_type(), "output #" + std::to_string(k) + " is not supported", opset});
      poison();
      return success();
    }
    if (values.count(out) || poisoned.count(out))
      return emitError(loc) << "writes '" << out
                            << "', which an earlier node, a model input or an initializer "
                               "already defines (a graph must define each value once)";
    values[out] = ctx.results[k];
  }
  return success();
}

/// ONNX's Gradient (ai.onnx.preview.training): the gradient of the value
/// named `y` with respect to each value named in `xs`. Its inputs are the
/// values named in `xs` then `zs` (held constant) themselves: the gradient
/// is taken where the graph computes them. A kiln.gradient op;
/// kiln-expand-gradients builds its backward graph.
LogicalResult Importer::convertGradient(const onnx::NodeProto &node, Location loc,
                                        const std::function<void()> &poison) {
  const onnx::AttributeProto *xs = nullptr, *y = nullptr, *zs = nullptr;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "xs")
      xs = &attr;
    else if (attr.name() == "y")
      y = &attr;
    else if (attr.name() == "zs")
      zs = &attr;
  }
  if (!xs || !y || xs->strings_size() == 0 || y->s().empty())
    return emitError(loc) << "Gradient needs the attributes xs (the values to differentiate "
                             "with respect to) and y (the value differentiated)";
  int held = zs ? zs->strings_size() : 0;
  if (node.input_size() != xs->strings_size() + held || node.output_size() < 1 ||
      node.output_size() > xs->strings_size())
    return emitError(loc) << "Gradient with " << xs->strings_size() << " xs and " << held
                          << " zs takes them as its inputs and gives one output per xs; it has "
                          << node.input_size() << " inputs and " << node.output_size()
                          << " outputs";
  // Fed other values than those named, the gradient would be taken at
  // another point than the graph computes: not supported.
  for (int k = 0; k < node.input_size(); ++k) {
    const std::string &named = k < xs->strings_size() ? xs->strings(k)
                                                      : zs->strings(k - xs->strings_size());
    if (node.input(k) != named)
      return emitError(loc) << "Gradient's input #" << k << " is '" << node.input(k)
                            << "', not the value '" << named
                            << "' its attributes name (kiln takes the gradient where the graph "
                               "computes it)";
  }
  SmallVector<std::string> used = {y->s()};
  for (const std::string &x : xs->strings())
    used.push_back(x);
  for (const std::string &name : used)
    if (poisoned.count(name)) {
      poison();
      return success();
    }
  auto valueOf = [&](const std::string &name) -> FailureOr<Value> {
    auto it = values.find(name);
    if (it == values.end()) {
      emitError(loc) << "Gradient uses '" << name
                     << "', which no earlier node, input or initializer defines";
      return failure();
    }
    auto type = llvm::cast<RankedTensorType>(it->second.getType());
    if (!llvm::isa<FloatType>(type.getElementType())) {
      emitError(loc) << "Gradient differentiates float values; '" << name << "' is " << type;
      return failure();
    }
    return it->second;
  };
  FailureOr<Value> of = valueOf(y->s());
  if (failed(of))
    return failure();
  SmallVector<Value> wrt;
  SmallVector<Type> types;
  for (const std::string &name : xs->strings()) {
    FailureOr<Value> x = valueOf(name);
    if (failed(x))
      return failure();
    wrt.push_back(*x);
    types.push_back(x->getType());
  }
  auto gradient = builder.create<GradientOp>(loc, types, *of, wrt);
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string &out = node.output(k);
    if (out.empty())
      continue;
    if (values.count(out) || poisoned.count(out))
      return emitError(loc) << "writes '" << out
                            << "', which an earlier node, a model input or an initializer "
                               "already defines (a graph must define each value once)";
    values[out] = gradient.getResult(k);
  }
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  std::string bytes, error;
  if (!readFileBytes(path, bytes, error)) {
    (void)fail("cannot read model file: " + error);
    return nullptr;
  }
  return run(bytes);
}

OwningOpRef<ModuleOp> Importer::run(const std::string &bytes) {
  context->loadDialect<KilnDialect, func::FuncDialect>();
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), bytes.size());
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT32_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    (void)fail("not a valid ONNX model: the protobuf does not parse");
    return nullptr;
  }
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      opset = set.version();
  // A newer opset may have changed an op's meaning: refuse rather than guess.
  if (opset > kNewestOpset) {
    (void)fail("the model uses opset " + Twine(opset) + " of the default domain; kiln knows "
               "opsets up to " + Twine(kNewestOpset));
    return nullptr;
  }
  if (opset < 1) {
    (void)fail("the model uses opset " + Twine(opset) + " of the default domain; opsets start at 1");
    return nullptr;
  }
  const onnx::GraphProto &graph = model.graph();

  OwningOpRef<ModuleOp> module = ModuleOp::create(base);
  std::string funcName = graph.name().empty() ? "model" : graph.name();
  for (char &c : funcName)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  auto func = func::FuncOp::create(base, funcName, builder.getFunctionType({}, {}));
  module->push_back(func);
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  // Initializers become weights.
  std::set<std::string> initialized;
  for (const onnx::TensorProto &init : graph.initializer()) {
    std::string error;
    FailureOr<DenseElementsAttr> value = tensorToAttr(context, init, error);
    if (failed(value)) {
      (void)fail("initializer " + error);
      return nullptr;
    }
    auto plain = llvm::cast<RankedTensorType>(value->getType());
    auto type = RankedTensorType::get(plain.getShape(), plain.getElementType(),
                                      getDefaultEncoding(context));
    Location loc = NameLoc::get(StringAttr::get(context, "initializer '" + init.name() + "'"), base);
    values[init.name()] = builder.create<WeightOp>(loc, type, builder.getStringAttr(init.name()), *value);
    initialized.insert(init.name());
  }
  // Graph inputs that are not initializers become the function's arguments.
  if (failed(collectSizeSymbols(graph, initialized)))
    return nullptr;
  if (!symbols.empty())
    func->setAttr(kSizeSymbolsAttrName, buildSizeSymbolsAttr(context, symbols));
  SmallVector<std::string> inputNames;
  std::set<std::string> specialized;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initialized.count(input.name()))
      continue;
    auto value = options.inputValues.find(input.name());
    if (value != options.inputValues.end()) {
      FailureOr<Value> constant = inputConstant(input, value->second);
      if (failed(constant))
        return nullptr;
      values[input.name()] = *constant;
      specialized.insert(input.name());
      continue;
    }
    FailureOr<RankedTensorType> type = inputType(input);
    if (failed(type))
      return nullptr;
    values[input.name()] = body->addArgument(*type, base);
    inputNames.push_back(input.name());
  }
  for (const auto &[name, path] : options.inputValues)
    if (!specialized.count(name)) {
      (void)fail("--input-value names '" + name + "', which is not an input of the model");
      return nullptr;
    }
  for (const auto &[name, shape] : options.inputShapes)
    if (!llvm::is_contained(inputNames, name)) {
      (void)fail("--input-shape names '" + name + "', which is not an input of the model");
      return nullptr;
    }

  for (int k = 0; k < graph.node_size(); ++k)
    if (failed(convertNode(graph.node(k), k)))
      return nullptr;

  if (!unsupported.empty()) {
    std::string message = std::to_string(unsupported.size()) + " node" +
                          (unsupported.size() == 1 ? "" : "s") + " cannot be compiled:";
    for (const Unsupported &u : unsupported)
      message += "\n  node '" + u.node + "' (" + u.opType + ", opset " +
                 std::to_string(u.opset) + "): " + u.reason;
    (void)fail(message);
    return nullptr;
  }

  SmallVector<Value> outputs;
  SmallVector<std::string> outputNames;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end()) {
      (void)fail("graph output '" + output.name() + "' is never computed");
      return nullptr;
    }
    outputs.push_back(it->second);
    outputNames.push_back(output.name());
  }
  if (outputs.empty()) {
    (void)fail("the graph has no outputs");
    return nullptr;
  }
  builder.create<func::ReturnOp>(base, outputs);
  if (!symbolicInts.empty() && failed(checkSizeValuesUnused(body)))
    return nullptr;
  // With the sizes the nodes read at run time.
  if (!symbols.empty())
    func->setAttr(kSizeSymbolsAttrName, buildSizeSymbolsAttr(context, symbols));
  SmallVector<Type> outputTypes;
  for (Value v : outputs)
    outputTypes.push_back(v.getType());
  func.setFunctionType(builder.getFunctionType(body->getArgumentTypes(), outputTypes));
  for (auto [i, name] : llvm::enumerate(inputNames))
    func.setArgAttr(i, "kiln.name", builder.getStringAttr(name));
  for (auto [i, name] : llvm::enumerate(outputNames))
    func.setResultAttr(i, "kiln.name", builder.getStringAttr(name));
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

bool parseShapeSpec(const std::string &text, std::vector<DimSpec> &dims, std::string &error) {
  dims.clear();
  if (text.empty())
    return false;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, 'x');
  for (llvm::StringRef part : parts) {
    DimSpec spec;
    auto [range, opt] = part.split(':');
    auto [low, high] = range.split("..");
    bool isRange = range.contains("..");
    if (low.getAsInteger(10, spec.min) || spec.min < 0 ||
        (isRange && (high.getAsInteger(10, spec.max) || spec.max < 0))) {
      error = "'" + part.str() + "' is not a size or a range MIN..MAX[:OPT]";
      return false;
    }
    if (!isRange) {
      if (!opt.empty() || part.contains(':')) {
        error = "'" + part.str() + "': only a range takes an :OPT";
        return false;
      }
      spec.max = spec.min;
    }
    spec.opt = spec.max;
    if (part.contains(':') && (opt.getAsInteger(10, spec.opt) || spec.opt < 0)) {
      error = "'" + part.str() + "' has an invalid OPT";
      return false;
    }
    if (spec.min > spec.max || spec.opt < spec.min || spec.opt > spec.max) {
      error = "'" + part.str() + "' needs MIN <= OPT <= MAX";
      return false;
    }
    dims.push_back(spec);
  }
  return true;
}

OwningOpRef<ModuleOp> importOnnxFile(const std::string &path, MLIRContext *context,
                                     const OnnxImportOptions &options) {
  return Importer(path, context, options).run();
}

OwningOpRef<ModuleOp> importOnnxBytes(const std::string &bytes, const std::string &name,
                                      MLIRContext *context, const OnnxImportOptions &options) {
  return Importer(name, context, options).run(bytes);
}

std::vector<std::string> supportedOnnxOpTypes() {
  std::vector<std::string> types;
  for (const auto &entry : converters())
    types.push_back(entry.first);
  std::sort(types.begin(), types.end());
  return types;
}

} // namespace frontend
} // namespace kiln
