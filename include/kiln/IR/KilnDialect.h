//===- KilnDialect.h - kiln dialect -----------------------------*- C++ -*-===//

#ifndef KILN_IR_KILNDIALECT_H
#define KILN_IR_KILNDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "kiln/IR/KilnDialect.h.inc"

#endif // KILN_IR_KILNDIALECT_H
