//===- KgParserFuzzer.cpp - fuzz the .kg frontend through verification ----===//
//
// Bytes as a .kg model: the parser must produce a module that verifies, or
// report an error; never crash or hang. Diagnostics are swallowed (they
// are the expected outcome for most inputs).
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/KgParser.h"
#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext();
    c->loadDialect<mlir::kiln::KilnDialect, mlir::func::FuncDialect>();
    c->disableMultithreading();
    return c;
  }();
  mlir::ScopedDiagnosticHandler quiet(context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.kg"),
      llvm::SMLoc());
  auto module = kiln::frontend::parseKgModel(sourceMgr, context);
  // What the parser accepts must verify.
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort();
  return 0;
}
