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

#endif // KILN_EXEC_EXECOPS_H
