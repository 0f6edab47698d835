//===- OnnxImporter.h - ONNX models to the Graph IR -------------*- C++ -*-===//
//
// Reads an .onnx file (protobuf, through libonnx's generated API) into the
// kiln Graph IR. Initializers become weights, graph inputs typed function
// arguments, and every op's location names its ONNX node and op type.
// Shape-computing subgraphs fold to constants, so the result is static.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_ONNXIMPORTER_H
#define KILN_FRONTEND_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {
namespace frontend {

struct OnnxImportOptions {
  /// Shapes for inputs whose dimensions the model leaves unknown
  /// (kilnc --input-shape NAME=1x3x224x224).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Inputs replaced by constants read from a .pb or .npy file
  /// (kilnc --input-value NAME=FILE): the model is specialised to those
  /// values, as when a shape or axes tensor arrives as an input.
  std::map<std::string, std::string> inputValues;
};

/// Imports `path`. Diagnostics go to the context's engine; every node kiln
/// cannot compile is listed in one error. Returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(const std::string &path,
                                                 mlir::MLIRContext *context,
                                                 const OnnxImportOptions &options);

/// The same for a model file's bytes (`name` names it in diagnostics).
mlir::OwningOpRef<mlir::ModuleOp> importOnnxBytes(const std::string &bytes,
                                                  const std::string &name,
                                                  mlir::MLIRContext *context,
                                                  const OnnxImportOptions &options);

/// The default-domain op types the importer has a converter for, sorted
/// (what a model may use; the structure-aware fuzzer draws from them).
std::vector<std::string> supportedOnnxOpTypes();

} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_ONNXIMPORTER_H
