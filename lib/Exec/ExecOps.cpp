//===- ExecOps.cpp - the execution-plan dialect ---------------------------===//

#include "kiln/Exec/ExecOps.h"

#include "kiln/IR/KilnTypes.h"

using namespace mlir;
using namespace mlir::kiln::exec;

#include "kiln/Exec/ExecDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Exec/ExecOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "kiln/Exec/ExecOps.cpp.inc"

LogicalResult StepOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its body takes "
                               << body.getNumArguments() << " arguments";
  for (auto [input, arg] : llvm::zip(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("input of type ") << input.getType()
                                           << " feeds a body argument of type " << arg.getType();
  // An empty body has no terminator to ask for.
  auto yield = body.empty() ? nullptr : llvm::dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end with exec.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields types that differ from its result types");
  if (auto offsets = getOffsets())
    if (offsets->size() != getNumResults())
      return emitOpError("has ") << offsets->size() << " offsets for " << getNumResults()
                                 << " results";
  if (getStream() && *getStream() < 0)
    return emitOpError("stream must be non-negative");
  return success();
}

bool mlir::kiln::exec::runsOnHost(StepOp step) {
  return llvm::any_of(step.getResults(), [](Value v) {
    auto encoding = getEncoding(v.getType());
    return encoding && encoding.getDeviceKind() == DeviceKind::CPU;
  });
}
