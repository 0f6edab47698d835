//===- KilnFolds.cpp - algebraic folders of kiln ops ----------------------===//
//
// Identities that hold for every value: x*1, x+0, x-0, x/1, x^1, double
// negation and logical not, chains of casts, reshapes, transposes,
// broadcasts, transfers and relayouts, no-op data movement, and transposes
// absorbed into matmul flags. None of these folders evaluates an op on
// constant operands: that is kiln-constant-fold's job, with its size limit.
//
// A fold may only replace a value by one of exactly the same type
// (shape, dtype, layout and device).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// `value` if it has exactly the type `type`, else no fold.
OpFoldResult sameTypeOr(Value value, Type type) {
  if (value && value.getType() == type)
    return value;
  return {};
}

/// True if `attr` is a splat constant equal to `expected` (exactly).
bool isSplatOf(Attribute attr, double expected) {
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  Type element = dense.getElementType();
  if (llvm::isa<FloatType>(element))
    return dense.getSplatValue<APFloat>().convertToDouble() == expected;
  if (element.isInteger(1))
    return dense.getSplatValue<bool>() == (expected != 0);
  if (llvm::isa<IntegerType>(element))
    return dense.getSplatValue<APInt>().getSExtValue() ==
           static_cast<int64_t>(expected);
  return false;
}

/// An integer tensor of static shape: a literal can stand for it (one of
/// symbolic size has no literal).
bool isIntegerTensor(Type type) {
  auto shaped = llvm::cast<ShapedType>(type);
  return llvm::isa<IntegerType>(shaped.getElementType()) && shaped.hasStaticShape();
}

/// A splat zero of `type`'s shape and dtype (the attribute has no encoding).
Attribute zerosLike(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  RankedTensorType plain = stripEncoding(tensor);
  return DenseElementsAttr::get(
      plain, IntegerAttr::get(tensor.getElementType(), 0));
}

/// True if a cast from `from` to `to` keeps every value exactly.
bool isLosslessCast(Type from, Type to) {
  if (from == to)
    return true;
  auto fromFloat = llvm::dyn_cast<FloatType>(from);
  auto toFloat = llvm::dyn_cast<FloatType>(to);
  if (fromFloat && toFloat)
    return (fromFloat.isF16() || fromFloat.isBF16())
               ? (toFloat.isF32() || toFloat.isF64())
               : (fromFloat.isF32() && toFloat.isF64());
  auto fromInt = llvm::dyn_cast<IntegerType>(from);
  if (!fromInt)
    return false;
  if (auto toInt = llvm::dyn_cast<IntegerType>(to))
    return toInt.getWidth() > fromInt.getWidth();
  // An integer fits in a float whose significand has at least as many bits.
  return toFloat && fromInt.getWidth() <= llvm::APFloat::semanticsPrecision(
                                              toFloat.getFloatSemantics());
}

/// True if `perm` swaps the last two dimensions and keeps the others.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/// For ops where op(op(x)) == op(x) with the outer attributes (reshape,
/// broadcast, transfer, relayout): a no-op folds to its input, and a chain
/// collapses onto the innermost input.
template <typename OpT>
OpFoldResult foldIdempotentChain(OpT op) {
  if (op.getInput().getType() == op.getType())
    return op.getInput();
  if (auto inner = op.getInput().template getDefiningOp<OpT>()) {
    if (inner.getInput().getType() == op.getType())
      return inner.getInput();
    op.getInputMutable().assign(inner.getInput());
    return op.getResult();
  }
  return {};
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return sameTypeOr(inner.getInput(), getType());
  return {};
}

OpFoldResult NotOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NotOp>())
    return sameTypeOr(inner.getInput(), getType());
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + 0 -> x. (Strictly -0.0 + 0.0 is +0.0; like XLA and TVM we accept it.)
  if (isSplatOf(adaptor.getRhs(), 0.0))
    return sameTypeOr(getLhs(), getType());
  if (isSplatOf(adaptor.getLhs(), 0.0))
    return sameTypeOr(getRhs(), getType());
  return {};
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0.0))
    return sameTypeOr(getLhs(), getType());
  // x - x -> 0 is only safe for integers: for floats inf - inf and NaN - NaN
  // are NaN.
  if (getLhs() == getRhs() && isIntegerTensor(getType()))
    return zerosLike(getType());
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1.0))
    return sameTypeOr(getLhs(), getType());
  if (isSplatOf(adaptor.getLhs(), 1.0))
    return sameTypeOr(getRhs(), getType());
  // x * 0 -> 0 only for integers (NaN * 0 and inf * 0 are NaN).
  if (isIntegerTensor(getType()) &&
      (isSplatOf(adaptor.getRhs(), 0.0) || isSplatOf(adaptor.getLhs(), 0.0)))
    return zerosLike(getType());
  return {};
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1.0))
    return sameTypeOr(getLhs(), getType());
  return {};
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1.0))
    return sameTypeOr(getLhs(), getType());
  return {};
}

OpFoldResult MaxOp::fold(FoldAdaptor) {
  if (getLhs() == getRhs())
    return sameTypeOr(getLhs(), getType());
  return {};
}

OpFoldResult MinOp::fold(FoldAdaptor) {
  if (getLhs() == getRhs())
    return sameTypeOr(getLhs(), getType());
  return {};
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs() || isSplatOf(adaptor.getRhs(), 1.0))
    return sameTypeOr(getLhs(), getType());
  if (isSplatOf(adaptor.getLhs(), 1.0))
    return sameTypeOr(getRhs(), getType());
  return {};
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs() || isSplatOf(adaptor.getRhs(), 0.0))
    return sameTypeOr(getLhs(), getType());
  if (isSplatOf(adaptor.getLhs(), 0.0))
    return sameTypeOr(getRhs(), getType());
  return {};
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return sameTypeOr(getLhs(), getType());
  if (isSplatOf(adaptor.getCond(), 1.0))
    return sameTypeOr(getLhs(), getType());
  if (isSplatOf(adaptor.getCond(), 0.0))
    return sameTypeOr(getRhs(), getType());
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x : A -> B) -> C) == cast(x -> C) when A -> B loses nothing.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Type a = inner.getInput().getType().getElementType();
    Type b = inner.getType().getElementType();
    if (isLosslessCast(a, b)) {
      if (inner.getInput().getType() == getType())
        return inner.getInput();
      getInputMutable().assign(inner.getInput());
      return getResult();
    }
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  // An inner reshape checked at run time holds the only check of its
  // sizes against its input: it stays.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>(); inner && inner.getCheckedAtRunTime())
    return {};
  return foldIdempotentChain(*this);
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == static_cast<int64_t>(i);
  if (identity)
    return sameTypeOr(getInput(), getType());
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    // result[i] = inner[perm[i]] = x[innerPerm[perm[i]]].
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner.getPerm()[p]);
    bool composedIdentity = true;
    for (size_t i = 0; i < composed.size(); ++i)
      composedIdentity &= composed[i] == static_cast<int64_t>(i);
    if (composedIdentity && inner.getInput().getType() == getType())
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    setPerm(composed);
    return getResult();
  }
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  return foldIdempotentChain(*this);
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  // A slice that keeps everything has the input's type (bounds read at run
  // time may still reverse it).
  if (getInput().getType() != getType() || getRunTimeBounds())
    return {};
  for (int64_t step : getSteps())
    if (step != 1)
      return {};
  return getInput();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return sameTypeOr(getInputs().front(), getType());
  return {};
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (llvm::all_of(getLow(), [](int64_t p) { return p == 0; }) &&
      llvm::all_of(getHigh(), [](int64_t p) { return p == 0; }))
    return sameTypeOr(getInput(), getType());
  return {};
}

OpFoldResult TransferOp::fold(FoldAdaptor) {
  return foldIdempotentChain(*this);
}

OpFoldResult RelayoutOp::fold(FoldAdaptor) {
  return foldIdempotentChain(*this);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

OpFoldResult MatMulOp::fold(FoldAdaptor) {
  // matmul(transpose(a, swap last two), b) == matmul(a, b, transpose_a = !ta).
  bool changed = false;
  if (auto t = getLhs().getDefiningOp<TransposeOp>();
      t && swapsLastTwo(t.getPerm())) {
    getLhsMutable().assign(t.getInput());
    setTransposeA(!getTransposeA());
    changed = true;
  }
  if (auto t = getRhs().getDefiningOp<TransposeOp>();
      t && swapsLastTwo(t.getPerm())) {
    getRhsMutable().assign(t.getInput());
    setTransposeB(!getTransposeB());
    changed = true;
  }
  return changed ? OpFoldResult(getResult()) : OpFoldResult();
}
