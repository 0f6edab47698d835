//===- KgParser.h - the .kg model language ----------------------*- C++ -*-===//
//
// Parses a .kg model (docs/kg-language.md) directly into the kiln Graph IR.
// Every op gets the file:line:col of its call as location, so that later
// errors point back into the model file.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_KGPARSER_H
#define KILN_FRONTEND_KGPARSER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace kiln {
namespace frontend {

/// Parses the main buffer of `sourceMgr` (its identifier is the file name,
/// used for locations and to resolve weight files). Diagnostics go to the
/// context's diagnostic engine; returns null after the first error.
mlir::OwningOpRef<mlir::ModuleOp> parseKgModel(llvm::SourceMgr &sourceMgr,
                                               mlir::MLIRContext *context);

/// Convenience: reads `path` into `sourceMgr` and parses it. Reports an
/// unreadable file as an error without a location.
mlir::OwningOpRef<mlir::ModuleOp> parseKgFile(llvm::StringRef path,
                                              llvm::SourceMgr &sourceMgr,
                                              mlir::MLIRContext *context);

} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_KGPARSER_H
