//===- IRDumps.h - the IR after parsing and after every pass ----*- C++ -*-===//
//
// kilnc --print-ir-after-all prints the module to stderr after parsing and
// after every pass; --dump-ir-dir=DIR writes it to DIR/NN-<pass>.mlir
// (00-input.mlir first), numbered across the graph and lowering pass
// managers. Both keep literals whole unless asked to elide them, so a
// dump reads back into kiln-opt.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_IRDUMPS_H
#define KILN_DRIVER_IRDUMPS_H

#include "kiln/Driver/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln {
namespace driver {

/// Printing flags that elide literals with more than `elideLimit`
/// elements; std::nullopt leaves MLIR's defaults (and its
/// --mlir-elide-elementsattrs-if-larger) alone.
mlir::OpPrintingFlags printingFlags(std::optional<unsigned> elideLimit);

class DumpToDirectory;

/// The dumps one compile asks for, shared by its pass managers.
class IRDumps {
public:
  explicit IRDumps(const CompileOptions &options);
  ~IRDumps();

  /// Creates the dump folder and dumps the parsed module. `inputName`
  /// names the model in the printed header.
  mlir::LogicalResult dumpParsed(mlir::ModuleOp module, llvm::StringRef inputName);

  /// Prints or dumps the module after every pass `pm` runs.
  void instrument(mlir::PassManager &pm);

private:
  const CompileOptions &options;
  std::unique_ptr<DumpToDirectory> toDirectory; // outlives every pass manager
};

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_IRDUMPS_H
