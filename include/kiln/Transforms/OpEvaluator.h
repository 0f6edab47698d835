//===- OpEvaluator.h - evaluate kiln ops on constant operands ---*- C++ -*-===//
//
// The bridge between the IR and the reference evaluator: converts
// DenseElementsAttr operands to reference tensors, runs the op's reference
// kernel and converts the result back.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_OPEVALUATOR_H
#define KILN_TRANSFORMS_OPEVALUATOR_H

#include "kiln/Reference/Tensor.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir {
namespace kiln {

/// The reference dtype of an MLIR element type, if kiln supports it.
std::optional<::kiln::ref::DType> toReferenceDType(Type elementType);

/// Converts a dense literal into a reference tensor.
FailureOr<::kiln::ref::Tensor> toReferenceTensor(ElementsAttr value);

/// Converts a reference tensor into a dense literal of `type` (whose encoding
/// is dropped: literals carry plain tensor types).
DenseElementsAttr toElementsAttr(const ::kiln::ref::Tensor &tensor,
                                 RankedTensorType type);

/// Evaluates a single-result kiln op whose operands are `operands`; fails
/// for ops the evaluator does not cover (constants, transfers, relayouts).
FailureOr<DenseElementsAttr> evaluateOp(Operation *op,
                                        ArrayRef<ElementsAttr> operands);

/// Multiply-adds needed to evaluate `op` (its element count for cheap ops).
int64_t estimateEvaluationCost(Operation *op);

} // namespace kiln
} // namespace mlir

#endif // KILN_TRANSFORMS_OPEVALUATOR_H
