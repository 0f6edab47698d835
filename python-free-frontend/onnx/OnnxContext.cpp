//===- OnnxContext.cpp - helpers of the ONNX op converters ----------------===//

#include "OnnxContext.h"

#include "kiln/Reference/SizeCode.h"

#include "kiln/IR/SymbolicSizes.h"

#include "mlir/IR/BuiltinOps.h"

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/Transforms/OpEvaluator.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

const onnx::AttributeProto *NodeContext::attr(const std::string &name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

const onnx::AttributeProto *
NodeContext::typedAttr(const std::string &name,
                       onnx::AttributeProto::AttributeType type) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a || a->type() == type || a->type() == onnx::AttributeProto::UNDEFINED)
    return a;
  if (attrError.empty())
    attrError = "attribute '" + name + "' must be " +
                onnx::AttributeProto_AttributeType_Name(type) + ", not " +
                onnx::AttributeProto_AttributeType_Name(a->type());
  return nullptr;
}

int64_t NodeContext::attrInt(const std::string &name, int64_t fallback) const {
  const onnx::AttributeProto *a = typedAttr(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

float NodeContext::attrFloat(const std::string &name, float fallback) const {
  const onnx::AttributeProto *a = typedAttr(name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::string NodeContext::attrString(const std::string &name, const std::string &fallback) const {
  const onnx::AttributeProto *a = typedAttr(name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> NodeContext::attrInts(const std::string &name) const {
  const onnx::AttributeProto *a = typedAttr(name, onnx::AttributeProto::INTS);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Value NodeContext::constant(DenseElementsAttr value) {
  auto plain = llvm::cast<RankedTensorType>(value.getType());
  auto type = RankedTensorType::get(plain.getShape(), plain.getElementType(),
                                    getDefaultEncoding(builder.getContext()));
  return builder.create<ConstantOp>(loc, type, value).getResult();
}

Value NodeContext::scalarLike(Value like, double value) {
  if (!like)
    return Value(); // an earlier build failed and said why
  Type element = type(like).getElementType();
  ::kiln::ref::Tensor t = ::kiln::ref::Tensor::zeros(*toReferenceDType(element), {});
  t.setDouble(0, value);
  return constant(toElementsAttr(t, RankedTensorType::get({}, element)));
}

Value NodeContext::constantI64(ArrayRef<int64_t> values, bool asVector) {
  auto type = RankedTensorType::get(
      asVector ? ArrayRef<int64_t>{static_cast<int64_t>(values.size())} : ArrayRef<int64_t>{},
      builder.getI64Type());
  return constant(DenseElementsAttr::get(type, values));
}

Value NodeContext::reshape(Value v, ArrayRef<int64_t> shape) {
  if (!v || type(v).getShape() == shape)
    return v;
  return build<ReshapeOp>(v, {named("shape", builder.getDenseI64ArrayAttr(shape))});
}

Value NodeContext::broadcastTo(Value v, ArrayRef<AffineExpr> sizes) {
  SmallVector<int64_t> shape;
  for (AffineExpr size : sizes)
    if (auto k = llvm::dyn_cast<AffineConstantExpr>(size))
      shape.push_back(k.getValue());
  if (shape.size() == sizes.size())
    return build<BroadcastOp>(v, {named("shape", ints(shape))});
  return build<BroadcastOp>(
      v, {named("shape", ints({})),
          named("sizes", AffineMapAttr::get(getSizesMap(sizes, builder.getContext())))});
}

Value NodeContext::cast(Value v, Type to) {
  if (!v || type(v).getElementType() == to)
    return v;
  return build<CastOp>(v, {named("to", TypeAttr::get(to))});
}

Value NodeContext::reshapeTo(Value v, ArrayRef<AffineExpr> sizes) {
  if (!v)
    return v;
  SmallVector<int64_t> shape;
  for (AffineExpr size : sizes) {
    auto c = llvm::dyn_cast<AffineConstantExpr>(size);
    if (!c)
      break;
    shape.push_back(c.getValue());
  }
  if (shape.size() == sizes.size() && !hasSymbolicSizes(v.getType()))
    return reshape(v, shape);
  if (ArrayRef<AffineExpr>(getDimSizes(type(v))) == sizes)
    return v;
  return build<ReshapeOp>(
      v, {named("shape", builder.getDenseI64ArrayAttr({})),
          named("sizes", AffineMapAttr::get(getSizesMap(sizes, builder.getContext())))});
}

std::optional<SmallVector<AffineExpr>> NodeContext::sizeInts(size_t k) {
  Value v = input(k);
  if (!v)
    return std::nullopt;
  if (symbolic)
    if (auto it = symbolic->find(v); it != symbolic->end())
      return it->second;
  if (!llvm::isa<IntegerType>(type(v).getElementType()) || type(v).getRank() > 1 ||
      hasSymbolicSizes(v.getType()))
    return std::nullopt;
  std::string saved = unsupported;
  FailureOr<SmallVector<int64_t>> values = constantInts(k);
  unsupported = saved;
  if (failed(values))
    return std::nullopt;
  SmallVector<AffineExpr> out;
  for (int64_t x : *values)
    out.push_back(getAffineConstantExpr(x, builder.getContext()));
  return out;
}

std::optional<SmallVector<AffineExpr>> NodeContext::runTimeInts(size_t k) {
  return runTimeInts(input(k), static_cast<int>(k) < node.input_size() ? node.input(k) : "");
}

std::optional<SmallVector<SmallVector<int64_t>>> NodeContext::runTimeElements(Value v,
                                                                              bool anyRank) {
  auto argument = llvm::dyn_cast_or_null<BlockArgument>(v);
  if (!runTime || !argument)
    return std::nullopt;
  RankedTensorType t = type(argument);
  constexpr int64_t kMostElements = 16;
  // The runtime reads i64, i32 and boolean elements.
  Type element = t.getElementType();
  if ((t.getRank() > 1 && !anyRank) ||
      !(element.isSignlessInteger(64) || element.isSignlessInteger(32) ||
        element.isSignlessInteger(1)) ||
      !t.hasStaticShape() || t.getNumElements() > kMostElements)
    return std::nullopt;
  SmallVector<SmallVector<int64_t>> codes;
  for (int64_t j = 0; j < t.getNumElements(); ++j)
    codes.push_back({static_cast<int64_t>(::kiln::ref::SizeOp::InputElement),
                     static_cast<int64_t>(argument.getArgNumber()), j});
  return codes;
}

std::optional<SmallVector<AffineExpr>> NodeContext::runTimeInts(Value v, const std::string &name,
                                                                bool anyRank) {
  std::optional<SmallVector<SmallVector<int64_t>>> codes = runTimeElements(v, anyRank);
  if (!codes)
    return std::nullopt;
  if (auto it = runTime->elements.find(v); it != runTime->elements.end())
    return it->second;
  bool vector = type(v).getRank() > 0;
  SmallVector<AffineExpr> elements;
  for (auto [j, code] : llvm::enumerate(*codes)) {
    AffineExpr e = computedSize(vector ? name + "[" + std::to_string(j) + "]" : name, code,
                                -kRunTimeValueBound, kRunTimeValueBound);
    if (!e)
      return std::nullopt;
    elements.push_back(e);
  }
  runTime->elements[v] = elements;
  return elements;
}

AffineExpr NodeContext::computedSize(const std::string &name, ArrayRef<int64_t> code, int64_t min,
                                     int64_t max) {
  if (code.size() > ::kiln::ref::kMaxSizeCode) {
    unsupported = "a size read at run time ('" + name.substr(0, 64) +
                  "') needs an expression longer than kiln's " +
                  std::to_string(::kiln::ref::kMaxSizeCode) + " instructions";
    return AffineExpr();
  }
  if (min > max) {
    unsupported = "a size read at run time ('" + name.substr(0, 64) + "') has no valid value";
    return AffineExpr();
  }
  SizeSymbol s;
  s.name = name;
  s.min = min;
  s.max = max;
  s.opt = std::clamp<int64_t>(1, min, max);
  s.code.assign(code.begin(), code.end());
  return addSizeSymbol(s);
}

AffineExpr NodeContext::addSizeSymbol(SizeSymbol s) {
  SmallVector<SizeSymbol> &symbols = *runTime->symbols;
  if (symbols.size() >= kMaxSizeSymbols) {
    unsupported = "needs more than " + std::to_string(kMaxSizeSymbols) +
                  " sizes (dimensions and values read at run time)";
    return AffineExpr();
  }
  // Names are for errors and dumps: at most 200 bytes (files allow 256).
  if (s.name.size() > 200)
    s.name = s.name.substr(0, 197) + "...";
  // Two symbols of one name: the later one is told apart.
  for (const SizeSymbol &other : symbols)
    if (other.name == s.name)
      s.name = s.name + "#" + std::to_string(symbols.size());
  symbols.push_back(s);
  sizeSymbols = symbols;
  return getAffineSymbolExpr(symbols.size() - 1, builder.getContext());
}

Value NodeContext::takePrefix(Value v, Value count, int64_t axis, const std::string &name) {
  if (!v || !count)
    return Value();
  SizeSymbol s;
  s.name = name;
  s.min = 0;
  // Planned at its largest: a run binds it only once the count is known.
  s.max = s.opt = type(v).getDimSize(axis);
  s.bound = true;
  AffineExpr length = addSizeSymbol(s);
  if (!length)
    return Value();
  return build<TakePrefixOp>(
      {v, count}, {named("axis", builder.getI64IntegerAttr(axis)),
                   named("length", AffineMapAttr::get(getSizesMap({length}, builder.getContext())))});
}

Value NodeContext::symbolicResult(ArrayRef<AffineExpr> values, bool asVector, Type element) {
  auto type = RankedTensorType::get(
      asVector ? ArrayRef<int64_t>{static_cast<int64_t>(values.size())} : ArrayRef<int64_t>{},
      element, getDefaultEncoding(builder.getContext()));
  Value sizeValue =
      builder.create<UnrealizedConversionCastOp>(loc, TypeRange{type}, ValueRange{}).getResult(0);
  (*symbolic)[sizeValue] = SmallVector<AffineExpr>(values);
  return sizeValue;
}

/// Evaluates `v` if its whole producing subgraph is constant.
static FailureOr<DenseElementsAttr> fold(Value v, llvm::DenseMap<Value, DenseElementsAttr> &memo) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  if (!def)
    return failure();
  DenseElementsAttr result;
  if (auto c = llvm::dyn_cast<ConstantOp>(def)) {
    result = llvm::dyn_cast<DenseElementsAttr>(c.getValue());
  } else if (auto w = llvm::dyn_cast<WeightOp>(def)) {
    result = llvm::dyn_cast<DenseElementsAttr>(w.getValue());
  } else {
    // Evaluating materialises every element of its operands and results: a
    // splat of 2^40 elements is a cheap constant, but not one to compute with.
    auto tooLarge = [](Type type) {
      return llvm::cast<RankedTensorType>(type).getNumElements() > kMaxComputedElements;
    };
    if (llvm::any_of(def->getOperandTypes(), tooLarge) || llvm::any_of(def->getResultTypes(), tooLarge))
      return failure();
    SmallVector<ElementsAttr> operands;
    for (Value operand : def->getOperands()) {
      FailureOr<DenseElementsAttr> folded = fold(operand, memo);
      if (failed(folded))
        return failure();
      operands.push_back(*folded);
    }
    FailureOr<DenseElementsAttr> evaluated = evaluateOp(def, operands);
    if (failed(evaluated))
      return failure();
    result = *evaluated;
  }
  if (!result)
    return failure();
  memo[v] = result;
  return result;
}

FailureOr<DenseElementsAttr> NodeContext::constantOf(Value v, size_t k) {
  llvm::DenseMap<Value, DenseElementsAttr> memo;
  FailureOr<DenseElementsAttr> value = v ? fold(v, memo) : FailureOr<DenseElementsAttr>(failure());
  if (failed(value))
    unsupported = "input #" + std::to_string(k) +
                  (static_cast<int>(k) < node.input_size() ? " ('" + node.input(k) + "')" : "") +
                  " must be a constant (computed from initializers and static shapes); if it is "
                  "a model input, give its value with --input-value";
  return value;
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(size_t k) {
  FailureOr<DenseElementsAttr> value = constantOf(input(k), k);
  if (failed(value))
    return failure();
  if (!llvm::isa<IntegerType>(value->getElementType())) {
    unsupported = "input #" + std::to_string(k) + " must hold integers";
    return failure();
  }
  if (value->getNumElements() > kMaxComputedElements) {
    unsupported = "input #" + std::to_string(k) + " holds " +
                  std::to_string(value->getNumElements()) +
                  " values, more than the importer reads (2^26)";
    return failure();
  }
  SmallVector<int64_t> out;
  for (APInt v : value->getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

FailureOr<double> NodeContext::constantScalar(size_t k) {
  FailureOr<DenseElementsAttr> value = constantOf(input(k), k);
  if (failed(value))
    return failure();
  if (value->getNumElements() != 1) {
    unsupported = "input #" + std::to_string(k) + " must be a scalar";
    return failure();
  }
  FailureOr<::kiln::ref::Tensor> t = toReferenceTensor(*value);
  if (failed(t))
    return failure();
  return t->getDouble(0);
}

FailureOr<int64_t> NodeContext::constantInteger(size_t k) {
  FailureOr<double> value = constantScalar(k);
  if (failed(value))
    return failure();
  constexpr double kLimit = double(int64_t(1) << 62);
  if (std::isnan(*value)) {
    emitError(loc) << "input #" << k << " is NaN, not a number of elements, index or axis";
    return failure();
  }
  if (!(std::abs(*value) <= kLimit)) {
    emitError(loc) << "input #" << k << " is " << *value << ", outside [-2^62, 2^62]";
    return failure();
  }
  return static_cast<int64_t>(*value);
}

FailureOr<int64_t> NodeContext::axis(int64_t a, int64_t rank) {
  if (a < -rank || a >= rank) { // a scalar has no axis
    emitError(loc) << "axis " << a << " is out of range for rank " << rank;
    return failure();
  }
  return a < 0 ? a + rank : a;
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
