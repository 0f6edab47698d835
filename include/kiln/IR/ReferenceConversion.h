//===- ReferenceConversion.h - literals <-> reference tensors ---*- C++ -*-===//
//
// Converts between the IR's dense literals and the reference evaluator's
// tensors: used by constant folding and by the frontends to build weights.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_REFERENCECONVERSION_H
#define KILN_IR_REFERENCECONVERSION_H

#include "kiln/Reference/Ops.h"
#include "kiln/Reference/Tensor.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
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

/// An op's attributes in the reference evaluator's form (integers, floats,
/// bools, integer arrays, strings and dtypes); fails, with an error on the
/// op, for any other kind of attribute.
FailureOr<::kiln::ref::OpAttrs> toReferenceAttrs(Operation *op);

/// True when an attribute of `op` has values only per size signature (a
/// symbolic target, slice bounds or reduction axes, an iota's length):
/// toReferenceAttrs leaves it out (an iota's symbolic length: no values), so such an op cannot
/// be evaluated at compile time.
bool hasPerSignatureAttrs(Operation *op);

} // namespace kiln
} // namespace mlir

#endif // KILN_IR_REFERENCECONVERSION_H
