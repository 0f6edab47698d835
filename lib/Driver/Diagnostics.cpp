//===- Diagnostics.cpp - diagnostics as the model's author reads them -----===//

#include "kiln/Driver/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln {
namespace driver {

std::string describeLocation(Location loc) {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn());
  if (auto name = llvm::dyn_cast<NameLoc>(loc)) {
    auto file = llvm::dyn_cast<FileLineColLoc>(name.getChildLoc());
    return (file ? file.getFilename().str() + ": " : std::string()) + name.getName().str();
  }
  return "<unknown>";
}

namespace {

/// ONNX nodes have no line numbers: name the model file and the node.
LogicalResult printOnnxNode(Diagnostic &diag) {
  auto name = llvm::dyn_cast<NameLoc>(diag.getLocation());
  auto file = name ? llvm::dyn_cast<FileLineColLoc>(name.getChildLoc()) : FileLineColLoc();
  if (!file || file.getLine() != 0)
    return failure(); // not an ONNX node: the source-manager handler prints it
  llvm::errs() << file.getFilename().getValue() << ": " << name.getName().getValue() << ": "
               << (diag.getSeverity() == DiagnosticSeverity::Error ? "error: " : "note: ")
               << diag.str() << "\n";
  return success();
}

/// The fusion report: one line per remark, without the source excerpt.
LogicalResult printRemark(Diagnostic &diag) {
  if (diag.getSeverity() != DiagnosticSeverity::Remark)
    return failure();
  llvm::errs() << describeLocation(diag.getLocation()) << ": " << diag.str() << "\n";
  return success();
}

} // namespace

DiagnosticPrinter::DiagnosticPrinter(llvm::SourceMgr &sourceMgr, MLIRContext *context)
    : sourceLines(sourceMgr, context), onnxNodes(context, printOnnxNode),
      remarks(context, printRemark) {}

} // namespace driver
} // namespace kiln
