//===- kiln-opt.cpp - the kiln pass driver --------------------------------===//
//
// mlir-opt over kiln IR: every kiln pass, canonicalize and cse, and the
// standard flags (--pass-pipeline, --mlir-print-ir-after-all,
// --mlir-timing, --split-input-file, --verify-diagnostics, ...).
//
//===----------------------------------------------------------------------===//

#include "kiln/Exec/ExecOps.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::kiln::registerAllKilnPasses();
  mlir::kiln::registerAllKilnLoweringPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::kiln::KilnDialect, mlir::kiln::exec::ExecDialect,
                  mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kiln graph optimizer driver\n", registry));
}
