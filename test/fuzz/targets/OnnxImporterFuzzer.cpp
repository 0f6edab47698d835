//===- OnnxImporterFuzzer.cpp - fuzz the ONNX importer --------------------===//
//
// Bytes as an ONNX model file: the importer must produce a module that
// verifies, or report errors; never crash or hang. (Byte-level mutations
// mostly break the protobuf; the seeds are real models so some mutations
// reach the converters.)
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/OnnxImporter.h"
#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext();
    c->loadDialect<mlir::kiln::KilnDialect, mlir::func::FuncDialect>();
    c->disableMultithreading();
    return c;
  }();
  mlir::ScopedDiagnosticHandler quiet(context, [](mlir::Diagnostic &) { return mlir::success(); });
  std::string bytes(reinterpret_cast<const char *>(data), size);
  auto module = kiln::frontend::importOnnxBytes(bytes, "fuzz.onnx", context, {});
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort();
  return 0;
}
