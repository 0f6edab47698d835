//===- Compilation.h - one model's compile, phase by phase ------*- C++ -*-===//
//
// What kilnc does between reading the model and writing the result:
//
//   start     record the target on the module; dump it as parsed
//   optimize  the graph pipeline; the fusion and layout reports; --dump-dot
//   lower     (--autotune,) the lowering to an execution plan; the plan
//             and kernel reports
//
// then, for executables, buildDeviceCode per model function. Every phase
// says what went wrong on stderr before it fails.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_COMPILATION_H
#define KILN_DRIVER_COMPILATION_H

#include "kiln/Driver/CompileOptions.h"
#include "kiln/Driver/IRDumps.h"
#include "kiln/Driver/PhaseClock.h"
#include "kiln/Target/ExecutableWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {
namespace driver {

/// The module's one model function; null, after an error saying `what`
/// needs exactly one, when it has none or several.
mlir::func::FuncOp modelFunction(mlir::ModuleOp module, llvm::StringRef what);

class Compilation {
public:
  /// `options` must pass verifyCompileOptions; both arguments outlive this.
  Compilation(const CompileOptions &options, PhaseClock &clock);

  /// start, then optimize unless -O0, then lower if options.lower.
  mlir::LogicalResult run(mlir::ModuleOp module, llvm::StringRef inputName);

  mlir::LogicalResult start(mlir::ModuleOp module, llvm::StringRef inputName);
  mlir::LogicalResult optimize(mlir::ModuleOp module);
  mlir::LogicalResult lower(mlir::ModuleOp module);

  /// The kernels of a lowered function for the GPU target (none for the
  /// CPU).
  mlir::LogicalResult buildDeviceCode(mlir::func::FuncOp plan, mlir::kiln::DeviceCode &code);

private:
  /// MLIR's pass manager flags (--mlir-timing, ...) and the dumps.
  mlir::LogicalResult configure(mlir::PassManager &pm);

  const CompileOptions &options;
  PhaseClock &clock;
  IRDumps dumps;
};

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_COMPILATION_H
