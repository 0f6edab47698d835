//===- DeviceCode.h - the generated kernels of a plan, compiled -*- C++ -*-===//
//
// For --target=cuda-emu the kernels are built by the host compiler into
// one shared object; for --target=cuda NVRTC compiles them to PTX and
// cubin per --arch. Both say on stderr what they did (and NVRTC's errors
// name the kernel and model location each line belongs to).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_DEVICECODE_H
#define KILN_DRIVER_DEVICECODE_H

#include "kiln/Driver/CompileOptions.h"
#include "kiln/Driver/PhaseClock.h"
#include "kiln/Target/ExecutableWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {
namespace driver {

/// The kernels of `plan` for options.target (a GPU target); steps without
/// a generated kernel run on the host. Marks the phases on `clock`.
mlir::LogicalResult buildDeviceCode(mlir::func::FuncOp plan, const CompileOptions &options,
                                    mlir::kiln::DeviceCode &code, PhaseClock &clock);

/// --emit=cuda: writes each distinct generated kernel to DIR/<name>.cu.
mlir::LogicalResult writeKernelSources(mlir::ModuleOp module, const CompileOptions &options,
                                       llvm::StringRef dir);

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_DEVICECODE_H
