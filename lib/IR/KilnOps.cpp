//===- KilnOps.cpp - kiln op definitions ----------------------------------===//
//
// The generated op classes, plus the verifiers of the two ops whose result
// type is stated rather than inferred. Type inference lives in
// KilnTypeInference.cpp and folders in KilnFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::kiln;

#define GET_OP_CLASSES
#include "kiln/IR/KilnOps.cpp.inc"

/// The literal's type must be the result type without its encoding.
static LogicalResult verifyLiteral(Operation *op, ElementsAttr value,
                                   RankedTensorType result) {
  auto valueType = llvm::dyn_cast<RankedTensorType>(value.getType());
  if (!valueType || valueType.getShape() != result.getShape() ||
      valueType.getElementType() != result.getElementType())
    return op->emitOpError("value of type ")
           << value.getType() << " does not match result shape and dtype "
           << result;
  return success();
}

LogicalResult ConstantOp::verify() {
  return verifyLiteral(*this, getValue(), getType());
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult IotaOp::verify() {
  AffineMap length = getLength();
  auto type = llvm::cast<RankedTensorType>(getType());
  if (length.getNumDims() || length.getNumResults() != 1 || type.getRank() != 1 ||
      !type.getElementType().isSignlessInteger(64) || getDimSizes(type)[0] != length.getResult(0))
    return emitOpError("takes a map to one size and gives an i64 vector of that size");
  return success();
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("weight name must not be empty");
  return verifyLiteral(*this, getValue(), getType());
}

/// Dumps name a weight's value after the weight: %fc1.w rather than %3.
void WeightOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult GradientOp::verify() {
  if (getGrads().size() != getWrt().size())
    return emitOpError("gives one gradient per value it differentiates with respect to");
  for (auto [grad, wrt] : llvm::zip(getGrads(), getWrt()))
    if (grad.getType() != wrt.getType())
      return emitOpError("gradient of type ")
             << grad.getType() << " for a value of type " << wrt.getType();
  return success();
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its body takes "
                               << body.getNumArguments() << " arguments";
  for (auto [input, arg] : llvm::zip(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("input of type ")
             << input.getType() << " feeds a body argument of type " << arg.getType();
  // An empty body has no terminator to ask for.
  auto yield = body.empty() ? nullptr : llvm::dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end with kiln.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields types that differ from its result types");
  for (Operation &op : body.without_terminator()) {
    // Unregistered operations have no dialect.
    if (!llvm::isa_and_nonnull<KilnDialect>(op.getDialect()) || llvm::isa<WeightOp, FusionOp>(op))
      return op.emitOpError("cannot be inside a kiln.fusion region");
    if (llvm::isa<TransferOp>(op))
      return op.emitOpError("moves data between devices; a fusion region cannot cross a "
                            "device boundary");
  }
  return success();
}
