//===- OpEvaluator.h - evaluate kiln ops on constant operands ---*- C++ -*-===//
//
// The bridge between the IR and the reference evaluator: converts
// DenseElementsAttr operands to reference tensors, runs the op's reference
// kernel and converts the result back.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_OPEVALUATOR_H
#define KILN_TRANSFORMS_OPEVALUATOR_H

#include "kiln/IR/ReferenceConversion.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir {
namespace kiln {

/// Evaluates a single-result kiln op whose operands are `operands`; fails
/// for ops the evaluator does not cover (constants and weights themselves)
/// and for element types it does not know.
FailureOr<DenseElementsAttr> evaluateOp(Operation *op,
                                        ArrayRef<ElementsAttr> operands);

/// Multiply-adds needed to evaluate `op` (its element count for cheap ops).
int64_t estimateEvaluationCost(Operation *op);

} // namespace kiln
} // namespace mlir

#endif // KILN_TRANSFORMS_OPEVALUATOR_H
