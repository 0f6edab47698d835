//===- Reports.h - what kilnc tells about a compile -------------*- C++ -*-===//
//
// The one-line summaries kilnc prints on stderr, each from the IR alone
// (lib/Driver/<Name>Report.cpp), so each can be called and tested by
// itself.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_REPORTS_H
#define KILN_DRIVER_REPORTS_H

#include "kiln/CodeGen/KernelGenerator.h"

#include "kiln/IR/SymbolicSizes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace kiln {
namespace driver {

/// After the fusion passes (--fusion-report, after its remarks), per
/// function: graph ops, kernels, and regions by kind.
void reportFusion(mlir::ModuleOp module, llvm::raw_ostream &os);

/// After kiln-assign-layouts, per function with any: the layout
/// conversions left at the model's boundary and the bytes they move.
void reportLayouts(mlir::ModuleOp module, llvm::raw_ostream &os);

/// After lowering, per function: steps, streams, events, the arena
/// against unshared buffers, library workspace and bytes moved.
void reportPlans(mlir::ModuleOp module, llvm::raw_ostream &os);

/// --kernel-report: per step, its library call, or why it runs on the host,
/// or its kernel with launch shape and, per architecture in `archs`, the
/// registers, shared memory and spills NVRTC reports. Fails if a kernel
/// does not compile (the report says why).
mlir::LogicalResult reportKernels(mlir::ModuleOp module, const std::vector<std::string> &archs,
                                  const mlir::kiln::CodeGenOptions &codeGen, llvm::raw_ostream &os);

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_REPORTS_H
