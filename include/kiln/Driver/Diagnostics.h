//===- Diagnostics.h - diagnostics as the model's author reads them -*- C++ -*-===//
//
// Errors point into the model file (file:line:col and the offending line;
// for ONNX, which has no lines, the file and the node), and the fusion
// report's remarks print one line each, without the source excerpt.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_DIAGNOSTICS_H
#define KILN_DRIVER_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/SourceMgr.h"

#include <string>

namespace kiln {
namespace driver {

/// A location as the user knows it: "model.kg:12:5", or "model.onnx: node"
/// for ONNX nodes.
std::string describeLocation(mlir::Location loc);

/// Prints the context's diagnostics on stderr for as long as it lives:
/// source excerpts from `sourceMgr` (which holds a .mlir input), ONNX nodes
/// by name, remarks on one line.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context);

private:
  // Handlers run newest first: remarks, then ONNX nodes, then the rest.
  mlir::SourceMgrDiagnosticHandler sourceLines;
  mlir::ScopedDiagnosticHandler onnxNodes;
  mlir::ScopedDiagnosticHandler remarks;
};

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_DIAGNOSTICS_H
