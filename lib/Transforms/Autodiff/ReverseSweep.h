//===- ReverseSweep.h - adjoints of a value, from the rule table -*- C++ -*-===//
//
// The reverse sweep both kiln-grad (a loss with respect to trainable
// weights) and kiln-expand-gradients (a kiln.gradient op with respect to
// its operands) run: activity forward from the sources, every op without
// a derivative named at once, then each op's rule (GradRules.cpp) walked
// backwards from the output, adjoints of values used more than once
// summed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_REVERSESWEEP_H
#define KILN_LIB_TRANSFORMS_REVERSESWEEP_H

#include "mlir/IR/Block.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace mlir {
namespace kiln {

struct SweepRequest {
  /// The value differentiated, seeded with ones (a scalar's derivative;
  /// otherwise that of its sum).
  Value output;
  /// The values whose adjoints are wanted.
  ArrayRef<Value> sources;
  /// The ops of the block before it compute `output`; the backward ops are
  /// built before it.
  Operation *end;
  /// How errors say what depends on what: "the loss 'loss' depends on
  /// through trainable weights".
  std::string dependsOn;
  /// Appended to the error that counts the ops without a derivative.
  std::string hint;
};

/// Whether `v` is a tensor of floats: what has an adjoint.
bool isFloatTensor(Value v);

/// The adjoint of each source (zeros where `output` does not depend on
/// it), built before `end`. Fails after an error per op without a derivative, at its location,
/// and one at `errorAt` counting them; or when a rule fails to build.
FailureOr<SmallVector<Value>> reverseSweep(Block &body, const SweepRequest &request,
                                           Operation *errorAt);

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_TRANSFORMS_REVERSESWEEP_H
