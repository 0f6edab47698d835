//===- ExecOps.h - the execution-plan dialect -------------------*- C++ -*-===//

#ifndef KILN_EXEC_EXECOPS_H
#define KILN_EXEC_EXECOPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"

#include "kiln/Exec/ExecDialect.h.inc"

#define GET_OP_CLASSES
#include "kiln/Exec/ExecOps.h.inc"

namespace mlir {
namespace kiln {
namespace exec {

/// Whether `step` runs on the host: its results are there (kiln-place left
/// its op on the host, or the whole plan is for the CPU). Such a step gets
/// neither a library call nor, in a GPU plan, a kernel.
bool runsOnHost(StepOp step);

} // namespace exec
} // namespace kiln
} // namespace mlir

#endif // KILN_EXEC_EXECOPS_H
