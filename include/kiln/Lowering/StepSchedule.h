//===- StepSchedule.h - order and concurrency of steps ----------*- C++ -*-===//
//
// Reads the steps of a function with their stream, event and wait
// attributes and answers "is step A ordered before step B?" with vector
// clocks: a stream runs its steps in order, and waiting for an event orders
// everything before the signalling step (on its stream, and transitively)
// before the waiting step. Steps without a stream are on stream 0.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_STEPSCHEDULE_H
#define KILN_LOWERING_STEPSCHEDULE_H

#include "kiln/Exec/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
namespace kiln {

class StepSchedule {
public:
  /// Fails (with a diagnostic) if a step waits for an event that no earlier
  /// step signals.
  static FailureOr<StepSchedule> build(func::FuncOp func);

  ArrayRef<exec::StepOp> getSteps() const { return steps; }
  int64_t getNumStreams() const { return numStreams; }
  /// Index of a step in program order.
  int64_t indexOf(exec::StepOp step) const { return index.lookup(step); }
  /// True if `before` completes before `after` starts in every execution.
  bool happensBefore(int64_t before, int64_t after) const;

private:
  SmallVector<exec::StepOp> steps;
  llvm::DenseMap<Operation *, int64_t> index;
  SmallVector<int64_t> stream;   ///< per step
  SmallVector<int64_t> position; ///< per step: 1-based position in its stream
  /// Per step: the highest position of every stream known complete when
  /// the step starts.
  SmallVector<SmallVector<int64_t>> clockAtStart;
  int64_t numStreams = 1;
};

} // namespace kiln
} // namespace mlir

#endif // KILN_LOWERING_STEPSCHEDULE_H
