//===- ElementEmitter.cpp - CUDA expressions for elementwise graph ops ----===//

#include "ElementEmitter.h"

#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/IR/OpClasses.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/SymbolicSizes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cctype>
#include <cmath>
#include <set>

using namespace mlir;
using namespace mlir::kiln;

/// "1.25f" / "1.25" with enough digits to round-trip.
std::string mlir::kiln::cudaLiteral(double value, bool isDouble) {
  if (std::isnan(value))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(value))
    return std::string(value < 0 ? "-" : "") + (isDouble ? "__longlong_as_double(0x7ff0000000000000LL)"
                                                          : "__int_as_float(0x7f800000)");
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  std::string s = buffer;
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return isDouble ? s : s + "f";
}

/// Whether `size` and all its parts are never negative (no negative
/// constant in it: symbols are sizes), so C's truncating division and
/// remainder are the floor ones.
static bool neverNegative(AffineExpr size) {
  if (auto constant = llvm::dyn_cast<AffineConstantExpr>(size))
    return constant.getValue() >= 0;
  if (auto binary = llvm::dyn_cast<AffineBinaryOpExpr>(size))
    return neverNegative(binary.getLHS()) && neverNegative(binary.getRHS());
  return true;
}

std::string mlir::kiln::sizeText(AffineExpr size) {
  if (auto constant = llvm::dyn_cast<AffineConstantExpr>(size))
    return std::to_string(constant.getValue()) + "LL";
  if (auto symbol = llvm::dyn_cast<AffineSymbolExpr>(size))
    return "s" + std::to_string(symbol.getPosition());
  auto binary = llvm::cast<AffineBinaryOpExpr>(size);
  std::string a = sizeText(binary.getLHS()), b = sizeText(binary.getRHS());
  // Divisors are positive constants. A part that may be negative (a
  // convolution's (s0 - 3) floordiv 2 at s0 = 2) divides by the floor
  // helpers, as the runtime evaluates sizes.
  bool plain = neverNegative(binary.getLHS());
  switch (size.getKind()) {
  case AffineExprKind::Add:
    return "(" + a + " + " + b + ")";
  case AffineExprKind::Mul:
    return "(" + a + " * " + b + ")";
  case AffineExprKind::FloorDiv:
    return plain ? "(" + a + " / " + b + ")" : "kiln_floordiv_size(" + a + ", " + b + ")";
  case AffineExprKind::CeilDiv:
    return plain ? "((" + a + " + " + b + " - 1LL) / " + b + ")"
                 : "(-kiln_floordiv_size(-" + a + ", " + b + "))";
  default: // Mod
    return plain ? "(" + a + " % " + b + ")"
                 : "(" + a + " - " + b + " * kiln_floordiv_size(" + a + ", " + b + "))";
  }
}

std::vector<unsigned> mlir::kiln::sizeSymbolsOf(exec::StepOp step) {
  std::set<unsigned> symbols;
  auto collect = [&](Type type) {
    if (!hasSymbolicSizes(type))
      return;
    for (AffineExpr size : getDimSizes(llvm::cast<RankedTensorType>(type)))
      size.walk([&](AffineExpr e) {
        if (auto symbol = llvm::dyn_cast<AffineSymbolExpr>(e))
          symbols.insert(symbol.getPosition());
      });
  };
  step->walk([&](Operation *op) {
    for (Type t : op->getOperandTypes())
      collect(t);
    for (Type t : op->getResultTypes())
      collect(t);
  });
  return {symbols.begin(), symbols.end()};
}

/// The memo key of `value` at `index`: a size-1 dimension is always index
/// 0, however the caller spelled it.
static std::string indexKey(Value value, const std::vector<std::string> &index) {
  auto dims = llvm::cast<RankedTensorType>(value.getType()).getShape();
  std::string key;
  for (size_t d = 0; d < index.size(); ++d)
    key += (d ? "," : "") + (d < dims.size() && dims[d] == 1 ? std::string("0LL") : index[d]);
  return key;
}

void ElementEmitter::seed(Value value, const std::vector<std::string> &index,
                          const std::string &expr) {
  computed[{value.getAsOpaquePointer(), indexKey(value, index)}] = expr;
}

std::vector<std::string> ElementEmitter::takeLines() {
  std::vector<std::string> out;
  out.swap(lines);
  computed.clear();
  return out;
}

std::vector<int64_t> ElementEmitter::rowMajorStrides(llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

std::vector<AffineExpr> ElementEmitter::rowMajorStrides(llvm::ArrayRef<AffineExpr> dims,
                                                        MLIRContext *context) {
  std::vector<AffineExpr> strides(dims.size(), getAffineConstantExpr(1, context));
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

std::vector<AffineExpr> ElementEmitter::physicalStrideSizes(RankedTensorType type) {
  SmallVector<AffineExpr> dims = getDimSizes(type);
  MLIRContext *context = type.getContext();
  TensorEncodingAttr encoding = getEncoding(type);
  if (!encoding || encoding.isRowMajor())
    return rowMajorStrides(dims, context);
  // dimOrder lists the logical dimensions outermost first.
  ArrayRef<int64_t> order = encoding.getDimOrder();
  std::vector<AffineExpr> strides(dims.size(), getAffineConstantExpr(1, context));
  AffineExpr stride = getAffineConstantExpr(1, context);
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = stride;
    stride = stride * dims[order[k]];
  }
  return strides;
}

std::optional<std::string> ElementEmitter::scalarType(Type type) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF32())
    return std::string("float");
  if (element.isF64())
    return std::string("double");
  if (element.isInteger(1))
    return std::string("bool");
  if (element.isF16() || element.isBF16())
    return std::string("float"); // stored narrow, computed in f32
  if (isInteger(type))
    return std::string("long long"); // wrapped to its width (fresh), as the reference does
  std::string name;
  llvm::raw_string_ostream os(name);
  os << element;
  fail("element type " + name + " has no generated kernel");
  return std::nullopt;
}

std::optional<std::string> ElementEmitter::storageType(Type type) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF16())
    return std::string("__half");
  if (element.isBF16())
    return std::string("__nv_bfloat16");
  if (auto integer = llvm::dyn_cast<IntegerType>(element); integer && isInteger(type)) {
    std::string base = integer.getWidth() == 8    ? "char"
                       : integer.getWidth() == 16 ? "short"
                       : integer.getWidth() == 32 ? "int"
                                                  : "long long";
    return (integer.isUnsigned() ? "unsigned " : (base == "char" ? "signed " : "")) + base;
  }
  return scalarType(type);
}

bool ElementEmitter::isInteger(Type type) {
  auto integer =
      llvm::dyn_cast<IntegerType>(llvm::cast<RankedTensorType>(type).getElementType());
  return integer && integer.getWidth() > 1;
}

std::string ElementEmitter::zeroOf(Type type) {
  if (isInteger(type))
    return "0LL";
  if (llvm::cast<RankedTensorType>(type).getElementType().isInteger(1))
    return "false";
  return cudaLiteral(0.0, llvm::cast<RankedTensorType>(type).getElementType().isF64());
}

std::string ElementEmitter::literalOf(Type type, double value) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (isInteger(type)) // the reference truncates toward zero
    return std::to_string(static_cast<long long>(std::trunc(value))) + "LL";
  if (element.isInteger(1))
    return value != 0.0 ? "true" : "false";
  return cudaLiteral(value, element.isF64());
}

std::string ElementEmitter::load(Type type, const std::string &expr) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF16())
    return "__half2float(" + expr + ")";
  if (element.isBF16())
    return "__bfloat162float(" + expr + ")";
  return expr;
}

std::string ElementEmitter::store(Type type, const std::string &expr) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  if (element.isF16())
    return "__float2half(" + expr + ")";
  if (element.isBF16())
    return "__float2bfloat16(" + expr + ")";
  return expr;
}

bool ElementEmitter::isNarrowFloat(Type type) {
  Type element = llvm::cast<RankedTensorType>(type).getElementType();
  return element.isF16() || element.isBF16();
}

std::optional<double> ElementEmitter::splatOf(Value value) {
  DenseElementsAttr dense = knownSplat(value);
  if (!dense)
    return std::nullopt;
  Type element = dense.getElementType();
  if (llvm::isa<FloatType>(element))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (element.isInteger(1))
    return dense.getSplatValue<bool>() ? 1.0 : 0.0;
  if (auto integer = llvm::dyn_cast<IntegerType>(element)) {
    // Only integers a double holds exactly become literals.
    APInt bits = dense.getSplatValue<APInt>();
    int64_t v = integer.isUnsigned() && integer.getWidth() < 64 ? static_cast<int64_t>(bits.getZExtValue())
                                                                : bits.getSExtValue();
    if (v >= -(int64_t(1) << 53) && v <= (int64_t(1) << 53))
      return static_cast<double>(v);
  }
  return std::nullopt;
}

bool ElementEmitter::supported(Operation *op) {
  // The ops placement puts on the device as per-element ops (one list,
  // kiln/IR/OpClasses.h), so a step never falls back to the host for one.
  if (std::string why = whyNoDeviceCode(op); !why.empty()) {
    fail(why);
    return false;
  }
  if (!isPerElementOp(op)) {
    fail("'" + op->getName().stripDialect().str() + "' is not computed one element at a time");
    return false;
  }
  // Values are computed by logical index; only a conversion may produce
  // another layout (which matters only where it is stored).
  for (Type t : op->getResultTypes())
    if (!scalarType(t) || (!getEncoding(t).isRowMajor() && !llvm::isa<RelayoutOp>(op)))
      return fail("a value is not row-major"), false;
  return true;
}

std::string ElementEmitter::valueAt(Value value, const std::vector<std::string> &index) {
  std::string key = indexKey(value, index);
  auto memo = computed.find({value.getAsOpaquePointer(), key});
  if (memo != computed.end())
    return memo->second;
  std::string result = compute(value, index);
  computed[{value.getAsOpaquePointer(), key}] = result;
  return result;
}

std::string ElementEmitter::fresh(Value value, const std::string &expr, bool wrap) {
  std::string name = "v" + std::to_string(next++);
  std::string wrapped = expr;
  // An integer narrower than 64 bits wraps to its width, as it would in
  // memory (the reference wraps every op's result).
  if (wrap && isInteger(value.getType()) &&
      llvm::cast<RankedTensorType>(value.getType()).getElementType().getIntOrFloatBitWidth() < 64)
    wrapped = "(long long)(" + *storageType(value.getType()) + ")(" + expr + ")";
  lines.push_back("const " + scalarType(value.getType()).value_or("float") + " " + name + " = " +
                  wrapped + ";");
  return name;
}

std::string ElementEmitter::declare(const std::string &type, const std::string &prefix,
                                    const std::string &init) {
  std::string name = prefix + std::to_string(next++);
  lines.push_back(type + " " + name + " = " + init + ";");
  return name;
}

std::string ElementEmitter::scoped(const std::function<std::string()> &computeInside,
                                   std::vector<std::string> &inside) {
  // Values computed inside depend on the scope's loop variables or guard:
  // forget them after it, keep what was known before.
  auto known = computed;
  std::vector<std::string> outside;
  outside.swap(lines);
  std::string result = computeInside();
  inside.clear();
  inside.swap(lines);
  lines.swap(outside);
  computed = std::move(known);
  return result;
}

void ElementEmitter::emitBlocks(const std::vector<std::string> &headers,
                                std::vector<std::string> body) {
  // Innermost first: each header wraps what is inside it, indented.
  for (size_t k = headers.size(); k-- > 0;) {
    std::vector<std::string> wrapped{headers[k] + " {"};
    for (const std::string &line : body)
      wrapped.push_back("  " + line);
    wrapped.push_back("}");
    body.swap(wrapped);
  }
  lines.insert(lines.end(), body.begin(), body.end());
}

std::vector<std::string> ElementEmitter::broadcastIndex(Value operand,
                                                      const std::vector<std::string> &index) {
  auto dims = llvm::cast<RankedTensorType>(operand.getType()).getShape();
  std::vector<std::string> out;
  size_t skip = index.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    out.push_back(dims[d] == 1 ? "0LL" : index[skip + d]);
  return out;
}

/// `expr`, in parentheses unless it is a name, a literal or one
/// parenthesised whole already.
static std::string parenthesized(const std::string &expr) {
  if (expr.find(' ') == std::string::npos)
    return expr;
  if (expr.front() == '(') {
    int depth = 0;
    for (size_t k = 0; k < expr.size(); ++k) {
      depth += expr[k] == '(' ? 1 : expr[k] == ')' ? -1 : 0;
      if (depth == 0)
        return k + 1 == expr.size() ? expr : "(" + expr + ")";
    }
  }
  return "(" + expr + ")";
}

std::string ElementEmitter::scaled(const std::string &index, AffineExpr stride) {
  if (auto constant = llvm::dyn_cast<AffineConstantExpr>(stride); constant && constant.getValue() == 1)
    return index;
  return parenthesized(index) + " * " + sizeText(stride);
}

/// "i + 3LL", "i * 2LL + 1LL": `start + index * step` as an expression.
static std::string strided(const std::string &rawIndex, int64_t start, int64_t step) {
  std::string index = step == 1 ? rawIndex : parenthesized(rawIndex);
  std::string term = step == 1 ? index : index + " * " + std::to_string(step) + "LL";
  if (start == 0)
    return step == 1 ? index : "(" + term + ")";
  return "(" + term + (start < 0 ? " - " : " + ") + std::to_string(start < 0 ? -start : start) +
         "LL)";
}

/// Comparisons and logical ops, the same for floats and integers (the
/// reference's applyPredicate).
static std::optional<std::string> predicate(Operation *op, const std::string &a,
                                            const std::string &b) {
  return llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case([&](AndOp) { return a + " && " + b; })
      .Case([&](OrOp) { return a + " || " + b; })
      .Case([&](EqOp) { return a + " == " + b; })
      .Case([&](NeOp) { return a + " != " + b; })
      .Case([&](LtOp) { return a + " < " + b; })
      .Case([&](LeOp) { return a + " <= " + b; })
      .Case([&](GtOp) { return a + " > " + b; })
      .Case([&](GeOp) { return a + " >= " + b; })
      .Default([](Operation *) { return std::nullopt; });
}

std::string ElementEmitter::compute(Value value, const std::vector<std::string> &rawIndex) {
  auto dims = llvm::cast<RankedTensorType>(value.getType()).getShape();
  // A size-1 dimension is index 0, however the caller spelled it.
  std::vector<std::string> index = rawIndex;
  for (size_t d = 0; d < index.size() && d < dims.size(); ++d)
    if (dims[d] == 1)
      index[d] = "0LL";
  if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
    Value input = step.getInputs()[arg.getArgNumber()];
    if (std::optional<double> splat = splatOf(input))
      return literalOf(value.getType(), *splat);
    // Inputs may be in any layout (a conversion reads the old one).
    std::vector<AffineExpr> strides =
        physicalStrideSizes(llvm::cast<RankedTensorType>(value.getType()));
    std::string offset;
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] != 1)
        offset += (offset.empty() ? "" : " + ") + scaled(index[d], strides[d]);
    // (Loaded, a narrow integer is in range already.)
    return fresh(value,
                 load(value.getType(), "in" + std::to_string(arg.getArgNumber()) + "[" +
                                           (offset.empty() ? "0" : offset) + "]"),
                 /*wrap=*/false);
  }
  Operation *op = value.getDefiningOp();
  bool isDouble = scalarType(value.getType()) == std::string("double");
  std::string f = isDouble ? "" : "f"; // float or double math functions
  auto operand = [&](unsigned k) {
    return valueAt(op->getOperand(k), broadcastIndex(op->getOperand(k), index));
  };
  if (llvm::isa<RelayoutOp>(op)) // the same logical element
    return operand(0);
  if (auto reshape = llvm::dyn_cast<ReshapeOp>(op)) {
    // Same row-major linear position in the input's shape.
    MLIRContext *context = value.getContext();
    std::vector<AffineExpr> strides =
        rowMajorStrides(getDimSizes(llvm::cast<RankedTensorType>(value.getType())), context);
    std::string linear;
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] != 1)
        linear += (linear.empty() ? "" : " + ") + scaled(index[d], strides[d]);
    if (linear.empty())
      linear = "0LL";
    auto inType = llvm::cast<RankedTensorType>(reshape.getInput().getType());
    SmallVector<AffineExpr> inDims = getDimSizes(inType);
    std::vector<AffineExpr> inStrides = rowMajorStrides(inDims, context);
    std::vector<std::string> inIndex;
    for (size_t d = 0; d < inDims.size(); ++d) {
      if (inType.getDimSize(d) == 1) {
        inIndex.push_back("0LL");
        continue;
      }
      std::string expr = "(" + linear + ")";
      if (inStrides[d] != getAffineConstantExpr(1, context))
        expr += " / " + sizeText(inStrides[d]);
      if (d > 0)
        expr += " % " + sizeText(inDims[d]);
      inIndex.push_back("(" + expr + ")");
    }
    return valueAt(reshape.getInput(), inIndex);
  }
  if (llvm::isa<BroadcastOp>(op))
    return operand(0);
  if (auto transpose = llvm::dyn_cast<TransposeOp>(op)) {
    // Result dimension k is input dimension perm[k]: index arithmetic, as
    // for a reshape (the writes stay coalesced; the reads follow the
    // permutation).
    ArrayRef<int64_t> perm = transpose.getPerm();
    std::vector<std::string> inIndex(index.size());
    for (size_t k = 0; k < perm.size(); ++k)
      inIndex[static_cast<size_t>(perm[k])] = index[k];
    return valueAt(transpose.getInput(), inIndex);
  }
  if (llvm::isa<SliceOp, ConcatOp, PadOp, GatherOp, GatherElementsOp>(op))
    return moveData(value, index);
  if (isWindowOp(op))
    return reduceWindow(value, index);
  if (auto norm = llvm::dyn_cast<BatchNormOp>(op)) {
    // Per channel (dimension 1): (x - mean) * scale / sqrt(var + eps) + bias.
    std::vector<std::string> channel = {index.size() > 1 ? index[1] : "0LL"};
    std::string x = operand(0), scale = valueAt(norm.getScale(), channel),
                bias = valueAt(norm.getBias(), channel), mean = valueAt(norm.getMean(), channel),
                var = valueAt(norm.getVariance(), channel);
    return fresh(value, "(" + x + " - " + mean + ") * " + scale + " / sqrt" + f + "(" + var +
                            " + " + cudaLiteral(norm.getEpsilon().convertToDouble(), isDouble) +
                            ") + " + bias);
  }
  if (llvm::isa<CastOp>(op)) {
    Type from = op->getOperand(0).getType();
    bool fromFloat = llvm::isa<FloatType>(llvm::cast<RankedTensorType>(from).getElementType());
    if (isInteger(value.getType())) // fresh wraps it to the width
      return fresh(value, fromFloat ? "kiln_f2i(" + operand(0) + ")" : "(long long)(" + operand(0) + ")");
    // A cast to f16/bf16 rounds to it, though the value stays in f32.
    std::string converted = "(" + *scalarType(value.getType()) + ")(" + operand(0) + ")";
    if (isNarrowFloat(value.getType()))
      converted = load(value.getType(), store(value.getType(), converted));
    return fresh(value, converted);
  }
  if (llvm::isa<SelectOp>(op))
    return fresh(value, operand(0) + " ? " + operand(1) + " : " + operand(2));
  if (isInteger(op->getOperand(0).getType()))
    return fresh(value, integerExpression(op, operand));
  std::string one = cudaLiteral(1.0, isDouble), zero = cudaLiteral(0.0, isDouble);
  if (op->getNumOperands() == 1) {
    std::string a = operand(0);
    std::string expr =
        llvm::TypeSwitch<Operation *, std::string>(op)
            .Case([&](NegOp) { return "-(" + a + ")"; })
            .Case([&](AbsOp) { return "fabs" + f + "(" + a + ")"; })
            .Case([&](ExpOp) { return "exp" + f + "(" + a + ")"; })
            .Case([&](LogOp) { return "log" + f + "(" + a + ")"; })
            .Case([&](SqrtOp) { return "sqrt" + f + "(" + a + ")"; })
            .Case([&](RsqrtOp) { return one + " / sqrt" + f + "(" + a + ")"; })
            .Case([&](TanhOp) { return "tanh" + f + "(" + a + ")"; })
            .Case([&](SigmoidOp) { return one + " / (" + one + " + exp" + f + "(-(" + a + ")))"; })
            // NaN stays NaN, as in the reference.
            .Case([&](ReluOp) { return a + " > " + zero + " ? " + a + " : (" + a + " != " + a + " ? " + a + " : " + zero + ")"; })
            .Case([&](GeluOp) {
              return cudaLiteral(0.5, isDouble) + " * " + a + " * (" + one + " + erf" + f + "(" + a +
                     " * " + cudaLiteral(0.70710678118654752, isDouble) + "))";
            })
            .Case([&](ErfOp) { return "erf" + f + "(" + a + ")"; })
            .Case([&](NotOp) { return "!" + a; })
            .Case([&](FloorOp) { return "floor" + f + "(" + a + ")"; })
            .Case([&](CeilOp) { return "ceil" + f + "(" + a + ")"; })
            .Case([&](RoundOp) { return "rint" + f + "(" + a + ")"; })
            .Case([&](SinOp) { return "sin" + f + "(" + a + ")"; })
            .Case([&](CosOp) { return "cos" + f + "(" + a + ")"; })
            .Case([&](TanOp) { return "tan" + f + "(" + a + ")"; })
            .Case([&](AsinOp) { return "asin" + f + "(" + a + ")"; })
            .Case([&](AcosOp) { return "acos" + f + "(" + a + ")"; })
            .Case([&](AtanOp) { return "atan" + f + "(" + a + ")"; })
            .Case([&](SinhOp) { return "sinh" + f + "(" + a + ")"; })
            .Case([&](CoshOp) { return "cosh" + f + "(" + a + ")"; })
            .Case([&](AsinhOp) { return "asinh" + f + "(" + a + ")"; })
            .Case([&](AcoshOp) { return "acosh" + f + "(" + a + ")"; })
            .Case([&](AtanhOp) { return "atanh" + f + "(" + a + ")"; })
            // Keeps NaN and -0, as the reference does.
            .Case([&](SignOp) { return a + " > " + zero + " ? " + one + " : (" + a + " < " + zero + " ? -" + one + " : " + a + ")"; })
            .Default([&](Operation *) { return std::string(); });
    return fresh(value, expr);
  }
  std::string a = operand(0), b = operand(1);
  // Max and min propagate NaN, as in the reference (fmaxf would not).
  std::string nan = "(" + a + " != " + a + " || " + b + " != " + b + ")";
  std::string expr =
      llvm::TypeSwitch<Operation *, std::string>(op)
          .Case([&](AddOp) { return a + " + " + b; })
          .Case([&](SubOp) { return a + " - " + b; })
          .Case([&](MulOp) { return a + " * " + b; })
          .Case([&](DivOp) { return a + " / " + b; })
          .Case([&](PowOp) { return "pow" + f + "(" + a + ", " + b + ")"; })
          .Case([&](MaxOp) { return nan + " ? " + a + " + " + b + " : (" + a + " > " + b + " ? " + a + " : " + b + ")"; })
          .Case([&](MinOp) { return nan + " ? " + a + " + " + b + " : (" + a + " < " + b + " ? " + a + " : " + b + ")"; })
          .Case([&](ModOp mod) {
            // fmod keeps the dividend's sign; Python-style mod the divisor's.
            std::string r = "fmod" + f + "(" + a + ", " + b + ")";
            if (mod.getFmod())
              return r;
            return "(" + r + " != " + zero + " && ((" + r + " < " + zero + ") != (" + b + " < " +
                   zero + ")) ? " + r + " + " + b + " : " + r + ")";
          })
          .Default([&](Operation *other) { return predicate(other, a, b).value_or(""); });
  return fresh(value, expr);
}

std::string
ElementEmitter::integerExpression(Operation *op,
                                  const std::function<std::string(unsigned)> &operand) {
  // Computed in 64 bits with wrapping arithmetic (through unsigned, where
  // signed overflow would be undefined), as the reference does; division
  // and remainder by zero give 0 there and here.
  auto wrapping = [](const std::string &a, const char *sign, const std::string &b) {
    return "(long long)((unsigned long long)" + a + " " + sign + " (unsigned long long)" + b + ")";
  };
  if (op->getNumOperands() == 1) {
    std::string a = operand(0);
    std::string negated = "(long long)(0ULL - (unsigned long long)" + a + ")";
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](NegOp) { return negated; })
        .Case([&](AbsOp) { return a + " < 0 ? " + negated + " : " + a; })
        .Case([&](ReluOp) { return a + " > 0 ? " + a + " : 0LL"; })
        .Case([&](NotOp) { return "!" + a; })
        .Case([&](SignOp) { return a + " > 0 ? 1LL : (" + a + " < 0 ? -1LL : 0LL)"; })
        .Case<FloorOp, CeilOp, RoundOp>([&](Operation *) { return a; })
        .Default([&](Operation *other) {
          fail("'" + other->getName().stripDialect().str() + "' has no integer kernel");
          return a;
        });
  }
  std::string a = operand(0), b = operand(1);
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([&](AddOp) { return wrapping(a, "+", b); })
      .Case([&](SubOp) { return wrapping(a, "-", b); })
      .Case([&](MulOp) { return wrapping(a, "*", b); })
      .Case([&](DivOp) { return "kiln_div_i64(" + a + ", " + b + ")"; })
      .Case([&](ModOp mod) {
        return "kiln_mod_i64(" + a + ", " + b + ", " + (mod.getFmod() ? "false" : "true") + ")";
      })
      .Case([&](PowOp) { return "kiln_pow_i64(" + a + ", " + b + ")"; })
      .Case([&](MaxOp) { return a + " > " + b + " ? " + a + " : " + b; })
      .Case([&](MinOp) { return a + " < " + b + " ? " + a + " : " + b; })
      .Default([&](Operation *other) {
        if (std::optional<std::string> compared = predicate(other, a, b))
          return *compared;
        fail("'" + other->getName().stripDialect().str() + "' has no integer kernel");
        return a;
      });
}

/// `axis` in [0, rank).
static int64_t normalisedAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

std::string ElementEmitter::moveData(Value value, const std::vector<std::string> &index) {
  Operation *op = value.getDefiningOp();
  auto inDims = [](Value v) { return llvm::cast<RankedTensorType>(v.getType()).getShape(); };
  // `inner` computed only where `condition` holds; `otherwise` elsewhere
  // (so nothing is read outside an input).
  auto guarded = [&](const std::string &condition, const std::function<std::string()> &inner,
                     const std::string &otherwise) {
    std::string result =
        declare(*scalarType(value.getType()), "v", otherwise);
    std::vector<std::string> inside;
    std::string x = scoped(inner, inside);
    inside.push_back(result + " = " + x + ";");
    emitBlocks({"if (" + condition + ")"}, inside);
    return result;
  };

  if (auto slice = llvm::dyn_cast<SliceOp>(op)) {
    std::vector<std::string> inIndex;
    for (size_t d = 0; d < index.size(); ++d)
      inIndex.push_back(strided(index[d], slice.getStarts()[d], slice.getSteps()[d]));
    return valueAt(slice.getInput(), inIndex);
  }
  if (auto pad = llvm::dyn_cast<PadOp>(op)) {
    std::vector<std::string> inIndex, inside;
    ArrayRef<int64_t> dims = inDims(pad.getInput());
    if (hasSymbolicSizes(pad.getInput().getType())) {
      fail("a pad over symbolic sizes has no kernel yet");
      return "0LL";
    }
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t low = pad.getLow()[d];
      inIndex.push_back(strided(index[d], -low, 1));
      if (low != 0 || pad.getHigh()[d] != 0)
        inside.push_back(inIndex.back() + " >= 0LL && " + inIndex.back() + " < " +
                         std::to_string(dims[d]) + "LL");
    }
    std::string fill = literalOf(value.getType(), pad.getValue().convertToDouble());
    if (inside.empty())
      return valueAt(pad.getInput(), inIndex);
    return guarded(llvm::join(inside, " && "),
                   [&] { return valueAt(pad.getInput(), inIndex); }, fill);
  }
  if (auto concat = llvm::dyn_cast<ConcatOp>(op)) {
    size_t axis = static_cast<size_t>(normalisedAxis(concat.getAxis(), index.size()));
    if (llvm::any_of(concat.getInputs(),
                     [&](Value v) { return ShapedType::isDynamic(inDims(v)[axis]); })) {
      fail("a concat along a symbolic axis has no kernel yet");
      return "0LL";
    }
    // if (i < end0) {...} else if (i < end1) {...} else {...}
    std::string result = declare(*scalarType(value.getType()), "v", zeroOf(value.getType()));
    int64_t start = 0;
    std::vector<Value> parts;
    for (Value input : concat.getInputs())
      if (inDims(input)[axis] != 0)
        parts.push_back(input);
    for (auto [k, input] : llvm::enumerate(parts)) {
      int64_t extent = inDims(input)[axis];
      std::vector<std::string> inIndex = index, inside;
      inIndex[axis] = strided(index[axis], -start, 1);
      std::string x = scoped([&] { return valueAt(input, inIndex); }, inside);
      std::string header = k + 1 == parts.size() ? (k == 0 ? "" : "else")
                                                : std::string(k == 0 ? "" : "else ") + "if (" +
                                                      index[axis] + " < " +
                                                      std::to_string(start + extent) + "LL)";
      if (header.empty()) { // one part: no branch
        lines.insert(lines.end(), inside.begin(), inside.end());
        lines.push_back(result + " = " + x + ";");
      } else {
        inside.push_back(result + " = " + x + ";");
        emitBlocks({header}, inside);
      }
      start += extent;
    }
    return result;
  }
  // gather / gather_elements: an index read from a tensor, negative ones
  // counted from the end; out of range reads nothing and gives 0, as the
  // reference does.
  Value data = op->getOperand(0), indices = op->getOperand(1);
  int64_t axis = normalisedAxis(op->getAttrOfType<IntegerAttr>("axis").getInt(),
                                static_cast<int64_t>(inDims(data).size()));
  if (ShapedType::isDynamic(inDims(data)[axis])) {
    fail("a gather along a symbolic axis has no kernel yet");
    return "0LL";
  }
  int64_t extent = inDims(data)[axis];
  std::vector<std::string> idxIndex, inIndex;
  size_t indexRank = inDims(indices).size();
  if (llvm::isa<GatherOp>(op)) {
    // result = data[:axis] ++ indices ++ data[axis+1:]
    idxIndex.assign(index.begin() + axis, index.begin() + axis + indexRank);
    inIndex.assign(index.begin(), index.begin() + axis);
    inIndex.push_back("");
    inIndex.insert(inIndex.end(), index.begin() + axis + indexRank, index.end());
  } else {
    idxIndex = index;
    inIndex = index;
  }
  std::string raw = valueAt(indices, idxIndex);
  std::string at = declare("const long long", "g",
                           raw + " < 0 ? " + raw + " + " + std::to_string(extent) + "LL : " + raw);
  inIndex[axis] = at;
  return guarded(at + " >= 0LL && " + at + " < " + std::to_string(extent) + "LL",
                 [&] { return valueAt(data, inIndex); }, zeroOf(value.getType()));
}

std::string ElementEmitter::reduceWindow(Value value, const std::vector<std::string> &index) {
  Operation *op = value.getDefiningOp();
  Value input = op->getOperand(0);
  auto inType = llvm::cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> inDims = inType.getShape();
  std::string type = *scalarType(input.getType());
  // Booleans reduce as the integers 0 and 1 (as the reference holds them).
  bool integer = isInteger(input.getType()) || inType.getElementType().isInteger(1);
  if (integer)
    type = "long long";
  bool isDouble = type == "double";
  auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
  auto forLoop = [&](const std::string &var, int64_t extent) {
    return "for (long long " + var + " = 0; " + var + " < " + L(extent) + "; ++" + var + ")";
  };
  // Over symbolic sizes only the float reductions loop over symbolic
  // extents and pooling takes a symbolic batch (hasDeviceCodeOverSymbolicSizes);
  // every other window reads static extents.
  bool floatReduction = llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                                  ReduceProdOp>(op);
  bool pooling = llvm::isa<MaxPool2dOp, AvgPool2dOp>(op);
  if (hasSymbolicSizes(inType) && !floatReduction && !(pooling && isStaticButBatch(inType))) {
    fail("'" + op->getName().stripDialect().str() + "' over symbolic sizes has no kernel yet");
    return "0LL";
  }

  if (llvm::isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    // Over one axis: its maximum, then the sum of exponentials, then this
    // element (numerically stable, as the row kernel and the reference).
    int64_t axis = normalisedAxis(op->getAttrOfType<IntegerAttr>("axis").getInt(),
                                  static_cast<int64_t>(inDims.size()));
    std::string f = isDouble ? "" : "f";
    std::string r = "r" + std::to_string(next++);
    std::vector<std::string> along = index, inside;
    along[axis] = r;
    std::string max = declare(type, "max", "-" + cudaLiteral(INFINITY, isDouble));
    std::string x = scoped([&] { return valueAt(input, along); }, inside);
    inside.push_back(max + " = (" + x + " > " + max + " || " + x + " != " + x + ") ? " + x +
                     " : " + max + ";");
    emitBlocks({forLoop(r, inDims[axis])}, inside);
    std::string sum = declare(type, "sum", cudaLiteral(0.0, isDouble));
    x = scoped([&] { return valueAt(input, along); }, inside);
    inside.push_back(sum + " += exp" + f + "(" + x + " - " + max + ");");
    emitBlocks({forLoop(r, inDims[axis])}, inside);
    std::string own = valueAt(input, index);
    if (llvm::isa<SoftmaxOp>(op))
      return fresh(value, "exp" + f + "(" + own + " - " + max + ") / " + sum);
    return fresh(value, own + " - " + max + " - log" + f + "(" + sum + ")");
  }

  if (auto scatter = llvm::dyn_cast<ScatterElementsOp>(op)) {
    // The data element, then every update whose index along the axis lands
    // here, in the reference's order (later ones win; add and mul
    // accumulate). Only positions that share this element's other
    // coordinates can land here: a loop along the indices' axis.
    int64_t axis = normalisedAxis(scatter.getAxis(), static_cast<int64_t>(inDims.size()));
    auto indexDims = llvm::cast<RankedTensorType>(scatter.getIndices().getType()).getShape();
    std::string result = declare(*scalarType(value.getType()), "v", valueAt(input, index));
    std::string j = "j" + std::to_string(next++);
    std::vector<std::string> at = index, reachable, inside;
    at[axis] = j;
    for (size_t d = 0; d < index.size(); ++d)
      if (static_cast<int64_t>(d) != axis && indexDims[d] < inDims[d])
        reachable.push_back(index[d] + " < " + L(indexDims[d]));
    if (llvm::any_of(indexDims, [](int64_t d) { return d == 0; }))
      return result;
    std::string update;
    std::string target = scoped(
        [&] {
          std::string raw = valueAt(scatter.getIndices(), at);
          update = valueAt(scatter.getUpdates(), at);
          return "(" + raw + " < 0 ? " + raw + " + " + L(inDims[axis]) + " : " + raw + ")";
        },
        inside);
    StringRef reduction = scatter.getReduction();
    std::string combined =
        reduction == "none" ? update
        : integer ? "(long long)((unsigned long long)" + result +
                        (reduction == "add" ? " + " : " * ") + "(unsigned long long)" + update + ")"
                  : result + (reduction == "add" ? " + " : " * ") + update;
    if (reduction != "none" && isNarrowFloat(value.getType())) // rounded at every update
      combined = load(value.getType(), store(value.getType(), combined));
    inside.push_back("if (" + target + " == " + index[axis] + ") " + result + " = " + combined + ";");
    std::vector<std::string> headers;
    if (!reachable.empty())
      headers.push_back("if (" + llvm::join(reachable, " && ") + ")");
    headers.push_back(forLoop(j, indexDims[axis]));
    emitBlocks(headers, inside);
    return fresh(value, result);
  }

  if (auto matmul = llvm::dyn_cast<MatMulOp>(op)) {
    // An integer (wrapping) or f64 matmul: the dot product of a row and a
    // column.
    auto aType = matmul.getLhs().getType(), bType = matmul.getRhs().getType();
    int64_t ra = aType.getRank(), rb = bType.getRank(), rc = index.size();
    bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
    int64_t k = aType.getDimSize(ta ? ra - 2 : ra - 1);
    std::string p = "p" + std::to_string(next++);
    std::string row = index[rc - 2], col = index[rc - 1];
    std::vector<std::string> batch(index.begin(), index.end() - 2);
    auto operandIndex = [&](int64_t rank, ArrayRef<int64_t> dims, std::string first,
                            std::string second) {
      std::vector<std::string> at;
      for (int64_t d = 0; d + 2 < rank; ++d) // batch dimensions, broadcast
        at.push_back(dims[d] == 1 ? "0LL" : batch[batch.size() - (rank - 2) + d]);
      at.push_back(first);
      at.push_back(second);
      return at;
    };
    std::vector<std::string> aAt = ta ? operandIndex(ra, aType.getShape(), p, row)
                                      : operandIndex(ra, aType.getShape(), row, p);
    std::vector<std::string> bAt = tb ? operandIndex(rb, bType.getShape(), col, p)
                                      : operandIndex(rb, bType.getShape(), p, col);
    std::string acc = declare(integer ? "long long" : type, "acc", zeroOf(value.getType()));
    std::vector<std::string> inside;
    std::string product = scoped(
        [&] {
          std::string a = valueAt(matmul.getLhs(), aAt), b = valueAt(matmul.getRhs(), bAt);
          return integer ? "(unsigned long long)" + a + " * (unsigned long long)" + b
                         : a + " * " + b;
        },
        inside);
    inside.push_back(integer ? acc + " = (long long)((unsigned long long)" + acc + " + " +
                                   product + ");"
                             : acc + " += " + product + ";");
    emitBlocks({forLoop(p, k)}, inside);
    return fresh(value, acc);
  }

  if (auto conv = llvm::dyn_cast<Conv2dOp>(op)) {
    // An integer or f64 convolution, logical NCHW: accumulated in double
    // and converted as the reference does (exact for 8- and 16-bit data).
    auto filterDims = conv.getFilter().getType().getShape();
    auto strides = conv.getStrides(), padding = conv.getPadding(), dilations = conv.getDilations();
    int64_t groupC = filterDims[1], perGroup = filterDims[0] / conv.getGroups();
    std::string n = std::to_string(next++);
    std::string c = "c" + n, kr = "kr" + n, ks = "ks" + n, ih = "ih" + n, iw = "iw" + n;
    std::string acc = declare("double", "acc",
                              conv.getBias() ? "(double)" + valueAt(conv.getBias(), {index[1]})
                                             : "0.0");
    std::string channel =
        "((" + index[1] + " / " + L(perGroup) + ") * " + L(groupC) + " + " + c + ")";
    std::vector<std::string> inside;
    std::string product = scoped(
        [&] {
          std::string x = valueAt(input, {index[0], channel, ih, iw});
          std::string w = valueAt(conv.getFilter(), {index[1], c, kr, ks});
          return "(double)" + x + " * (double)" + w;
        },
        inside);
    std::vector<std::string> body = {
        "const long long " + iw + " = " + strided(index[3], -padding[1], strides[1]) + " + " +
            strided(ks, 0, dilations[1]) + ";",
        "if (" + iw + " < 0LL || " + iw + " >= " + L(inDims[3]) + ") continue;"};
    body.insert(body.end(), inside.begin(), inside.end());
    body.push_back(acc + " += " + product + ";");
    std::vector<std::string> rows = {
        "const long long " + ih + " = " + strided(index[2], -padding[0], strides[0]) + " + " +
            strided(kr, 0, dilations[0]) + ";",
        "if (" + ih + " < 0LL || " + ih + " >= " + L(inDims[2]) + ") continue;",
        forLoop(ks, filterDims[3]) + " {"};
    for (const std::string &line : body)
      rows.push_back("  " + line);
    rows.push_back("}");
    emitBlocks({forLoop(c, groupC), forLoop(kr, filterDims[2])}, rows);
    return fresh(value, integer ? "kiln_f2i(" + acc + ")" : acc);
  }

  if (llvm::isa<MaxPool2dOp, AvgPool2dOp>(op)) {
    // Integers pool in double and convert as the reference does.
    if (integer) {
      type = "double";
      isDouble = true;
    }
    // Logical NCHW. Taps inside the input count for both; ceil mode may
    // overhang the padding, and those count for neither (as the reference).
    auto kernelSize = op->getAttrOfType<DenseI64ArrayAttr>("kernel").asArrayRef();
    auto strides = op->getAttrOfType<DenseI64ArrayAttr>("strides").asArrayRef();
    auto padding = op->getAttrOfType<DenseI64ArrayAttr>("padding").asArrayRef();
    auto dilations = op->getAttrOfType<DenseI64ArrayAttr>("dilations").asArrayRef();
    bool isMax = llvm::isa<MaxPool2dOp>(op);
    bool includePad = op->getAttrOfType<BoolAttr>("count_include_pad").getValue();
    std::string n = std::to_string(next);
    std::string best, sum, taps;
    if (isMax) {
      best = declare(type, "best", "-" + cudaLiteral(INFINITY, isDouble));
    } else {
      sum = declare(type, "sum", cudaLiteral(0.0, isDouble));
      taps = declare("long long", "taps", "0LL");
    }
    std::string ih = "ih" + n, iw = "iw" + n, kr = "kr" + n, ks = "ks" + n;
    std::vector<std::string> inside;
    std::string x = scoped([&] { return valueAt(input, {index[0], index[1], ih, iw}); }, inside);
    lines.push_back("for (long long " + kr + " = 0; " + kr + " < " + L(kernelSize[0]) + "; ++" +
                    kr + ") {");
    lines.push_back("  const long long " + ih + " = " + strided(index[2], -padding[0], strides[0]) +
                    " + " + strided(kr, 0, dilations[0]) + ";");
    lines.push_back("  if (" + ih + " >= " + L(inDims[2] + padding[2]) + ") break;");
    lines.push_back("  for (long long " + ks + " = 0; " + ks + " < " + L(kernelSize[1]) + "; ++" +
                    ks + ") {");
    lines.push_back("    const long long " + iw + " = " + strided(index[3], -padding[1], strides[1]) +
                    " + " + strided(ks, 0, dilations[1]) + ";");
    lines.push_back("    if (" + iw + " >= " + L(inDims[3] + padding[3]) + ") break;");
    if (includePad && !isMax)
      lines.push_back("    ++" + taps + ";");
    lines.push_back("    if (" + ih + " < 0LL || " + ih + " >= " + L(inDims[2]) + " || " + iw +
                    " < 0LL || " + iw + " >= " + L(inDims[3]) + ") continue;");
    for (const std::string &line : inside)
      lines.push_back("    " + line);
    if (isMax)
      lines.push_back("    " + best + " = (" + x + " > " + best + " || " + x + " != " + x + ") ? " +
                      x + " : " + best + ";");
    else
      lines.push_back("    " + sum + " += " + x + ";" + (includePad ? "" : " ++" + taps + ";"));
    lines.push_back("  }");
    lines.push_back("}");
    std::string pooled =
        isMax ? best : sum + " / (" + type + ")(" + taps + " > 0LL ? " + taps + " : 1LL)";
    return fresh(value, integer ? "kiln_f2i(" + pooled + ")" : pooled);
  }

  // Reductions and argmax: the output index names the kept dimensions;
  // loops run over the reduced ones.
  std::vector<int64_t> axes;
  bool keepdims = true;
  if (auto list = op->getAttrOfType<DenseI64ArrayAttr>("axes")) {
    axes.assign(list.asArrayRef().begin(), list.asArrayRef().end());
    keepdims = op->getAttrOfType<BoolAttr>("keepdims").getValue();
  } else if (auto argmax = llvm::dyn_cast<ArgMaxOp>(op)) {
    axes.push_back(argmax.getAxis());
    keepdims = argmax.getKeepdims();
  } else { // global_avg_pool: the spatial dimensions, kept
    for (int64_t d = 2; d < static_cast<int64_t>(inDims.size()); ++d)
      axes.push_back(d);
  }
  std::vector<bool> reduced(inDims.size(), false);
  for (int64_t a : axes)
    reduced[normalisedAxis(a, inDims.size())] = true;
  std::vector<std::string> inIndex, loopVars;
  std::vector<int64_t> loopExtents;
  int64_t count = 1;
  // The reduced extents as C (symbolic ones over the size parameters) and
  // their product: a float reduction may run over symbolic extents.
  SmallVector<AffineExpr> dimSizes = getDimSizes(inType);
  std::vector<std::string> loopBounds;
  AffineExpr countSize = getAffineConstantExpr(1, op->getContext());
  size_t out = 0;
  for (size_t d = 0; d < inDims.size(); ++d) {
    if (!reduced[d]) {
      inIndex.push_back(index[out++]);
      continue;
    }
    if (keepdims)
      ++out;
    std::string var = "r" + std::to_string(next++);
    inIndex.push_back(var);
    loopVars.push_back(var);
    loopExtents.push_back(inDims[d]); // (only read where static: argmax)
    loopBounds.push_back(sizeText(dimSizes[d]));
    countSize = countSize * dimSizes[d];
  }
  bool symbolicCount = !llvm::isa<AffineConstantExpr>(countSize);
  if (!symbolicCount)
    count = llvm::cast<AffineConstantExpr>(countSize).getValue();
  if (symbolicCount && (integer || llvm::isa<ArgMaxOp>(op))) {
    fail("argmax and integer reductions over a symbolic extent have no kernel yet");
    return "0LL";
  }

  if (auto argmax = llvm::dyn_cast<ArgMaxOp>(op)) {
    // The first maximum; NaN counts as the largest.
    if (count == 0)
      return "0LL";
    std::vector<std::string> first = inIndex, inside;
    first[normalisedAxis(argmax.getAxis(), inDims.size())] = "0LL";
    std::string top = declare(type, "top", valueAt(input, first));
    std::string best = declare("long long", "best", "0LL");
    std::string x = scoped([&] { return valueAt(input, inIndex); }, inside);
    std::string nan = integer ? "" : " || (" + x + " != " + x + " && " + top + " == " + top + ")";
    inside.insert(inside.end(), {"if (" + x + " > " + top + nan + ") {", "  " + top + " = " + x + ";",
                                 "  " + best + " = " + loopVars[0] + ";", "}"});
    emitBlocks({"for (long long " + loopVars[0] + " = 1; " + loopVars[0] + " < " +
                std::to_string(loopExtents[0]) + "LL; ++" + loopVars[0] + ")"},
               inside);
    return best;
  }

  enum { Sum, Mean, Max, Min, Prod } kind =
      llvm::isa<ReduceSumOp>(op)                               ? Sum
      : llvm::isa<ReduceMeanOp, GlobalAvgPoolOp>(op)           ? Mean
      : llvm::isa<ReduceMaxOp>(op)                             ? Max
      : llvm::isa<ReduceMinOp>(op)                             ? Min
                                                               : Prod;
  // The reference's start: floats from the identity, integers from 0 (1 for
  // a product) when nothing is reduced and from the first element otherwise.
  std::string init;
  if (integer)
    init = kind == Prod ? "1LL"
           : count == 0 ? "0LL"
           : kind == Max ? "(-0x7fffffffffffffffLL - 1)"
           : kind == Min ? "0x7fffffffffffffffLL"
                         : "0LL";
  else
    init = kind == Prod  ? cudaLiteral(1.0, isDouble)
           : kind == Max ? "-" + cudaLiteral(INFINITY, isDouble)
           : kind == Min ? cudaLiteral(INFINITY, isDouble)
                         : cudaLiteral(0.0, isDouble);
  std::string acc = declare(type, "acc", init);
  std::vector<std::string> inside;
  std::string x = scoped([&] { return valueAt(input, inIndex); }, inside);
  std::string update;
  if (integer)
    update = kind == Max   ? acc + " = " + x + " > " + acc + " ? " + x + " : " + acc + ";"
             : kind == Min ? acc + " = " + x + " < " + acc + " ? " + x + " : " + acc + ";"
             : acc + " = (long long)((unsigned long long)" + acc +
                   (kind == Prod ? " * " : " + ") + "(unsigned long long)" + x + ");";
  else // max and min keep a NaN once seen
    update = kind == Max   ? acc + " = (" + x + " > " + acc + " || " + x + " != " + x + ") ? " + x + " : " + acc + ";"
             : kind == Min ? acc + " = (" + x + " < " + acc + " || " + x + " != " + x + ") ? " + x + " : " + acc + ";"
             : kind == Prod ? acc + " *= " + x + ";"
                            : acc + " += " + x + ";";
  // Nested loops over the reduced axes, outermost first.
  std::vector<std::string> headers;
  for (size_t k = 0; k < loopVars.size(); ++k)
    headers.push_back("for (long long " + loopVars[k] + " = 0; " + loopVars[k] + " < " +
                      loopBounds[k] + "; ++" + loopVars[k] + ")");
  inside.push_back(update);
  emitBlocks(headers, inside);
  if (kind != Mean)
    return fresh(value, acc);
  if (symbolicCount) // (float: the integer case refused above)
    return fresh(value, acc + " / (" + type + ")" + sizeText(countSize));
  if (integer)
    return fresh(value, count ? acc + " / " + std::to_string(count) + "LL" : acc);
  return fresh(value, acc + " / " + cudaLiteral(static_cast<double>(count), isDouble));
}

/// Records a parameter's size and element type (its storage type known, so
/// the reference has its dtype).
static void recordParam(GeneratedKernel &kernel, Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  ::kiln::ref::DType dtype = *toReferenceDType(tensor.getElementType());
  int64_t width = ::kiln::ref::byteWidth(dtype);
  kernel.paramDTypes.push_back(static_cast<int>(dtype));
  kernel.paramByteCodes.emplace_back();
  if (!hasSymbolicSizes(tensor)) {
    kernel.paramBytes.push_back(tensor.getNumElements() * width);
    return;
  }
  // Over symbolic sizes: the bytes as a size, evaluated per run.
  kernel.paramBytes.push_back(-1);
  SmallVector<int64_t> code;
  appendSizeCode(productOf(getDimSizes(tensor), tensor.getContext()) * width, code);
  kernel.paramByteCodes.back().assign(code.begin(), code.end());
}

std::vector<std::string> mlir::kiln::kernelParameters(exec::StepOp step, ElementEmitter &elements,
                                                      GeneratedKernel &kernel,
                                                      bool anyOutputLayout) {
  std::vector<std::string> params;
  for (auto [k, input] : llvm::enumerate(step.getInputs())) {
    if (ElementEmitter::splatOf(input))
      continue;
    std::optional<std::string> type = elements.storageType(input.getType());
    if (!type)
      return {};
    // Only a layout conversion reads another layout (through the element
    // emitter's physical strides); the tiled emitters index row-major.
    Value arg = step.getBody().getArgument(static_cast<unsigned>(k));
    if (!getEncoding(input.getType()).isRowMajor() &&
        !llvm::all_of(arg.getUsers(), [](Operation *u) { return llvm::isa<RelayoutOp>(u); })) {
      elements.fail("an input is not row-major");
      return {};
    }
    params.push_back("const " + *type + " *__restrict__ in" + std::to_string(k));
    kernel.inputArgs.push_back(static_cast<uint32_t>(k));
    kernel.paramTypes.push_back("const " + *type + " *");
    recordParam(kernel, input.getType());
  }
  for (auto [k, output] : llvm::enumerate(step.getResults())) {
    std::optional<std::string> type = elements.storageType(output.getType());
    if (!type)
      return {};
    if (!anyOutputLayout && !getEncoding(output.getType()).isRowMajor()) {
      elements.fail("an output is not row-major");
      return {};
    }
    params.push_back(*type + " *__restrict__ out" + std::to_string(k));
    kernel.paramTypes.push_back(*type + " *");
    recordParam(kernel, output.getType());
  }
  appendSizeParameters(step, kernel, params);
  return params;
}

void mlir::kiln::appendSizeParameters(exec::StepOp step, GeneratedKernel &kernel,
                                      std::vector<std::string> &params) {
  // Over symbolic sizes, the symbols' values for this launch.
  SmallVector<SizeSymbol> symbols = getSizeSymbols(step->getParentOfType<func::FuncOp>());
  for (unsigned symbol : sizeSymbolsOf(step)) {
    // Named in a comment (a model's dimension names are any text: only
    // letters, digits and _ are kept).
    std::string name = symbol < symbols.size() ? symbols[symbol].name : "";
    for (char &c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)))
        c = '_';
    params.push_back("const long long s" + std::to_string(symbol) +
                     (name.empty() ? "" : " /* " + name + " */"));
    kernel.sizeArgs.push_back(getAffineSymbolExpr(symbol, step.getContext()));
  }
}

std::vector<std::string> ElementEmitter::decompose(llvm::ArrayRef<AffineExpr> dims,
                                                   const std::string &linear,
                                                   const std::string &prefix,
                                                   std::vector<std::string> &lines) {
  std::vector<std::string> index;
  if (dims.empty())
    return index;
  MLIRContext *context = dims.front().getContext();
  std::vector<AffineExpr> strides = rowMajorStrides(dims, context);
  AffineExpr one = getAffineConstantExpr(1, context);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == one) {
      index.push_back("0LL");
      continue;
    }
    std::string expr = strides[d] == one ? linear : "(" + linear + " / " + sizeText(strides[d]) + ")";
    if (d > 0)
      expr += " % " + sizeText(dims[d]);
    std::string name = prefix + std::to_string(d);
    lines.push_back("const long long " + name + " = " + expr + ";");
    index.push_back(name);
  }
  return index;
}

std::string ElementEmitter::batchOffset(RankedTensorType operand,
                                        const std::vector<std::string> &resultBatchIndex) {
  auto dims = operand.getShape();
  size_t rank = dims.size();
  std::vector<AffineExpr> strides = rowMajorStrides(getDimSizes(operand), operand.getContext());
  std::string offset;
  size_t skip = resultBatchIndex.size() - (rank - 2);
  for (size_t d = 0; d + 2 < rank; ++d)
    if (dims[d] != 1)
      offset += (offset.empty() ? "" : " + ") + resultBatchIndex[skip + d] + " * " +
                sizeText(strides[d]);
  return offset.empty() ? std::string("0LL") : offset;
}

std::string mlir::kiln::integerHelpersFor(const std::string &source) {
  // Integer arithmetic as the reference computes it; a kernel carries the
  // helpers it calls (guarded, so a translation unit may hold several).
  static const std::pair<const char *, const char *> helpers[] = {
      {"kiln_div_i64", R"(// Division by zero gives 0; the one overflowing quotient (INT64_MIN / -1)
// wraps.
__device__ __forceinline__ long long kiln_div_i64(long long a, long long b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return (long long)(0ULL - (unsigned long long)a);
  return a / b;
}
)"},
      {"kiln_mod_i64", R"(// The remainder with the dividend's sign (fmod) or the divisor's
// (floored); by zero it is 0.
__device__ __forceinline__ long long kiln_mod_i64(long long a, long long b, bool floored) {
  if (b == 0 || b == -1)
    return 0;
  const long long r = a % b;
  return floored && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
)"},
      {"kiln_pow_i64", R"(// By squaring, wrapping; a negative exponent truncates 1/a^-b toward zero.
__device__ __forceinline__ long long kiln_pow_i64(long long a, long long b) {
  if (b < 0)
    return a == 1 ? 1 : (a == -1 ? ((b % 2) ? -1 : 1) : 0);
  unsigned long long result = 1, base = (unsigned long long)a;
  for (long long e = b; e > 0; e >>= 1) {
    if (e & 1)
      result *= base;
    base *= base;
  }
  return (long long)result;
}
)"},
      {"kiln_floordiv_size", R"(// Floor division by a positive divisor, as sizes are evaluated (C's
// division truncates toward zero).
__device__ __forceinline__ long long kiln_floordiv_size(long long a, long long b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
)"},
      {"kiln_f2i", R"(// Toward zero; NaN gives 0 and out-of-range values saturate to 64 bits
// (the caller wraps to the width).
__device__ __forceinline__ long long kiln_f2i(double x) {
  if (x != x)
    return 0;
  if (x >= 9.2233720368547758e18)
    return 0x7fffffffffffffffLL;
  if (x <= -9.2233720368547758e18)
    return -0x7fffffffffffffffLL - 1;
  return (long long)x;
}
)"},
  };
  std::string text;
  for (auto [name, definition] : helpers) {
    if (source.find(std::string(name) + "(") == std::string::npos)
      continue;
    std::string guard = "KILN_HELPER_" + llvm::StringRef(name).upper();
    text += "#ifndef " + guard + "\n#define " + guard + "\n" + definition + "#endif\n";
  }
  return text;
}

std::string ElementEmitter::includesFor(exec::StepOp step) {
  bool f16 = false, bf16 = false;
  auto note = [&](Type type) {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return;
    f16 |= tensor.getElementType().isF16();
    bf16 |= tensor.getElementType().isBF16();
  };
  for (Value v : step.getInputs())
    note(v.getType());
  step.getBody().walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      note(t);
  });
  return std::string(f16 ? "#include <cuda_fp16.h>\n" : "") +
         (bf16 ? "#include <cuda_bf16.h>\n" : "");
}

const char *mlir::kiln::kernelPrelude() {
  return "#ifndef KILN_SHARED\n"
         "#define KILN_SHARED(T, name, count) __shared__ T name[count]\n"
         "#endif\n"
         "#ifndef KILN_SHARED_ALIGNED\n"
         "#define KILN_SHARED_ALIGNED(T, name, count, align) __shared__ __align__(align) T "
         "name[count]\n"
         "#endif\n"
         "#ifndef KILN_DYNAMIC_SHARED\n"
         "#define KILN_DYNAMIC_SHARED(T, name) \\\n"
         "  extern __shared__ __align__(16) unsigned char kiln_dynamic_shared[]; \\\n"
         "  T *const name = reinterpret_cast<T *>(kiln_dynamic_shared)\n"
         "#endif\n";
}

const char *mlir::kiln::blockReduceHelpers() {
  static const std::string text = std::string(kernelPrelude()) + R"(#ifndef KILN_REDUCE_HELPERS
#define KILN_REDUCE_HELPERS
struct KilnSum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct KilnProd {
  __device__ float operator()(float a, float b) const { return a * b; }
};
// Max and min propagate NaN, as the reference does.
struct KilnMax {
  __device__ float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
};
struct KilnMin {
  __device__ float operator()(float a, float b) const { return (a < b || a != a) ? a : b; }
};
// The reduction of every thread's `v` over the block, returned to all of
// them. blockDim.x is a multiple of 32; `scratch` holds 32 floats.
template <typename Op>
__device__ float kiln_block_reduce(float v, float *scratch, Op op, float identity) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (lane == 0)
      scratch[0] = v;
  }
  __syncthreads();
  v = scratch[0];
  __syncthreads(); // the scratch is reused by the next reduction
  return v;
}
// The reduction of every lane's `v` over the warp, returned to all lanes.
template <typename Op> __device__ float kiln_warp_reduce(float v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
#endif
)";
  return text.c_str();
}
