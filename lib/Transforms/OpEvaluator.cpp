//===- OpEvaluator.cpp - evaluate kiln ops with the reference kernels -----===//

#include "kiln/Transforms/OpEvaluator.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/ReferenceConversion.h"
#include "kiln/Reference/Ops.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::kiln;
namespace ref = ::kiln::ref;

FailureOr<DenseElementsAttr>
mlir::kiln::evaluateOp(Operation *op, ArrayRef<ElementsAttr> operands) {
  if (op->getNumResults() != 1)
    return failure();
  auto resultType = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType || !toReferenceDType(resultType.getElementType()))
    return failure();
  // An empty result is known without computing (and the kernels would loop
  // over the dimensions a zero one leaves unbounded).
  if (resultType.getNumElements() == 0)
    return toElementsAttr(ref::Tensor::zeros(*toReferenceDType(resultType.getElementType()),
                                             ref::Shape(resultType.getShape())),
                          resultType);
  SmallVector<ref::Tensor> inputs;
  for (ElementsAttr operand : operands) {
    FailureOr<ref::Tensor> t = toReferenceTensor(operand);
    if (failed(t))
      return failure();
    inputs.push_back(std::move(*t));
  }
  // Silence attribute-conversion errors: an op that cannot be evaluated is
  // simply not folded.
  ScopedDiagnosticHandler quiet(op->getContext(), [](Diagnostic &) { return success(); });
  FailureOr<ref::OpAttrs> attrs = toReferenceAttrs(op);
  if (failed(attrs))
    return failure();
  // An op whose attributes exist only per run (a slice's bounds or a
  // reduction's axes read at run time) is not folded.
  if (hasPerSignatureAttrs(op))
    return failure();
  std::vector<const ref::Tensor *> operandPtrs;
  for (const ref::Tensor &t : inputs)
    operandPtrs.push_back(&t);
  std::optional<ref::Tensor> result =
      ref::evaluate(op->getName().getStringRef().str(), *attrs, operandPtrs);
  if (!result || result->shape != ref::Shape(resultType.getShape()))
    return failure();
  return toElementsAttr(*result, resultType);
}

int64_t mlir::kiln::estimateEvaluationCost(Operation *op) {
  auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  int64_t outputs = resultType.getNumElements();
  if (auto matmul = llvm::dyn_cast<MatMulOp>(op)) {
    RankedTensorType a = matmul.getLhs().getType();
    return outputs * a.getDimSize(a.getRank() - (matmul.getTransposeA() ? 2 : 1));
  }
  if (auto conv = llvm::dyn_cast<Conv2dOp>(op)) {
    RankedTensorType w = conv.getFilter().getType();
    return outputs * w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
  }
  int64_t inputs = 0;
  for (Value operand : op->getOperands())
    inputs += llvm::cast<ShapedType>(operand.getType()).getNumElements();
  return std::max(outputs, inputs);
}
