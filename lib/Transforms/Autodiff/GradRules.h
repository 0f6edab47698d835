//===- GradRules.h - one derivative rule per kiln op ------------*- C++ -*-===//
//
// Reverse-mode autodiff (kiln-grad) asks each op for its vector-Jacobian
// product: the adjoints of its operands given its result's adjoint, built
// from ordinary kiln ops. The rules live in one table (GradRules.cpp), as
// Enzyme's Derivatives.td and JAX's transpose rules do: an op absent from
// it has no derivative, and one listed without a rule carries no gradient
// (floor, sign: zero almost everywhere).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_GRADRULES_H
#define KILN_LIB_TRANSFORMS_GRADRULES_H

#include "kiln/Frontend/BuildOp.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir {
namespace kiln {

/// Builds the backward ops of one forward op, at its location.
class GradBuilder {
public:
  GradBuilder(OpBuilder &builder, Location loc, bool &failed)
      : builder(builder), loc(loc), failed(failed) {}

  /// An op of inferred type; null (with an error at the op, and `failed`
  /// set) if it fails.
  template <typename OpT>
  Value build(ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) {
    for (Value v : operands)
      if (!v)
        return Value();
    Operation *op = ::kiln::frontend::buildOp<OpT>(builder, loc, operands, attrs);
    failed |= !op;
    return op ? op->getResult(0) : Value();
  }
  NamedAttribute named(StringRef name, Attribute value) {
    return builder.getNamedAttr(name, value);
  }
  NamedAttribute axes(ArrayRef<int64_t> axes) {
    return named("axes", builder.getDenseI64ArrayAttr(axes));
  }
  NamedAttribute axis(int64_t axis) { return named("axis", builder.getI64IntegerAttr(axis)); }

  /// A rank-0 constant of `like`'s element type and device.
  Value scalar(Value like, double value);
  /// A constant of `type` filled with `value`.
  Value splat(RankedTensorType type, double value);
  /// `g` summed over the dimensions `type` broadcasts (NumPy's rules) and
  /// reshaped to it: the adjoint of an operand broadcast to g's shape.
  Value unbroadcast(Value g, RankedTensorType type);
  /// `g` (reduced over `axes` of `type`, without keepdims or with) spread
  /// back over `type`: the adjoint of a reduction's input.
  Value spread(Value g, RankedTensorType type, ArrayRef<int64_t> axes);
  Value reshape(Value v, ArrayRef<int64_t> shape);
  Value select(Value cond, Value a, Value b);
  Value slice(Value v, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
              ArrayRef<int64_t> steps);
  /// `v` padded with zeros (itself when nothing is added).
  Value pad(Value v, ArrayRef<int64_t> low, ArrayRef<int64_t> high);
  NamedAttribute keepdims() { return named("keepdims", builder.getBoolAttr(true)); }

  OpBuilder &builder;
  Location loc;
  bool &failed;
};

/// A rule: the adjoint of each operand (null for an operand that takes
/// none: an index, a condition).
using GradRule =
    std::function<SmallVector<Value>(GradBuilder &b, Operation *op, Value resultGrad)>;

/// The rule for ops named `name` ("kiln.mul"); null if `name` carries no
/// gradient (listed without a rule); std::nullopt if no rule exists.
std::optional<GradRule> findGradRule(StringRef name);

/// Makes `outputs` the function's results, named `names` (`kiln.name`),
/// in place of its return's: what kiln-grad and kiln-optimizer return.
void replaceOutputs(func::FuncOp func, ArrayRef<Value> outputs, ArrayRef<StringAttr> names);

/// Why `op`, which has a rule, cannot be differentiated with these
/// attributes or types (a scatter that multiplies, a layout
/// other than row-major); empty if it can.
std::string whyNoDerivative(Operation *op);

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_TRANSFORMS_GRADRULES_H
