//===- OnnxImporter.h - ONNX models to the Graph IR -------------*- C++ -*-===//
//
// Reads an .onnx file (protobuf, through libonnx's generated API) into the
// kiln Graph IR. Initializers become weights, graph inputs typed function
// arguments, and every op's location names its ONNX node and op type.
// Shape-computing subgraphs fold to constants, or, over dynamic
// dimensions, to symbolic sizes.
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

/// One dimension of an --input-shape: a size (min == max == opt) or a
/// range MIN..MAX tuned for OPT.
struct DimSpec {
  int64_t min = 0, max = 0, opt = 0;
  bool isStatic() const { return min == max; }
};

/// Parses "D0xD1x..." where each D is N or MIN..MAX[:OPT] (OPT defaults to
/// MAX); false with `error` set on a malformed or empty range.
bool parseShapeSpec(const std::string &text, std::vector<DimSpec> &dims,
                    std::string &error);

struct OnnxImportOptions {
  /// Shapes for inputs whose dimensions the model leaves unknown, or
  /// ranges for dynamic ones (kilnc --input-shape NAME=1..8x3x224x224).
  std::map<std::string, std::vector<DimSpec>> inputShapes;
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
