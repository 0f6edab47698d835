//===- KilnOps.h - kiln graph operations ------------------------*- C++ -*-===//

#ifndef KILN_IR_KILNOPS_H
#define KILN_IR_KILNOPS_H

#include "kiln/IR/KilnAttrs.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnTraits.h"
#include "kiln/IR/KilnTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "kiln/IR/KilnOps.h.inc"

#endif // KILN_IR_KILNOPS_H
