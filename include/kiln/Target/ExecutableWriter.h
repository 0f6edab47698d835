//===- ExecutableWriter.h - execution plan to .kx ---------------*- C++ -*-===//

#ifndef KILN_TARGET_EXECUTABLEWRITER_H
#define KILN_TARGET_EXECUTABLEWRITER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace kiln {

/// Serializes a function lowered to an execution plan (steps with streams,
/// events and offsets) into a .kx file. The output depends only on the IR,
/// so the same model always gives the same bytes. Reports errors on the
/// offending op.
LogicalResult writeExecutable(func::FuncOp func, llvm::raw_ostream &os);

} // namespace kiln
} // namespace mlir

#endif // KILN_TARGET_EXECUTABLEWRITER_H
