//===- OpClasses.h - families of kiln ops -----------------------*- C++ -*-===//
//
// One definition of which ops are elementwise and which are row-wise
// reductions, shared by fusion (what a region may hold), placement (what
// has device code) and the kernel emitters (what they generate), so the
// three cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_OPCLASSES_H
#define KILN_IR_OPCLASSES_H

#include "mlir/IR/Operation.h"

namespace mlir {
namespace kiln {

/// Unary and binary ops, comparisons, select, cast, and inference batch
/// normalisation (a per-channel affine map): each result element depends
/// only on the operand elements at the same (broadcast) index.
bool isElementwiseOp(Operation *op);

/// Reductions and row-wise normalisations that one block per row computes:
/// reduce_sum/mean/max/min/prod, softmax, log_softmax, layer_norm,
/// global_avg_pool.
bool isRowReductionOp(Operation *op);

} // namespace kiln
} // namespace mlir

#endif // KILN_IR_OPCLASSES_H
