//===- Autotune.h - measure library calls against generated kernels -*- C++ -*-===//
//
// kilnc --autotune: the optimised graph is lowered twice, once with every
// matmul step a cuBLASLt call and once with every one generated; both
// executables run on GPU 0 with CUDA-event step timings, and each step's
// median time in the two runs goes into the tuning cache, keyed by the
// problem. The final compile then decides those steps by the measurements.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_AUTOTUNE_H
#define KILN_DRIVER_AUTOTUNE_H

#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/TuningCache.h"
#include "kiln/Target/ExecutableWriter.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace kiln {
namespace driver {

using BuildDeviceCode =
    std::function<mlir::LogicalResult(mlir::func::FuncOp, mlir::kiln::DeviceCode &)>;

/// Measures every matmul step of `graph` both ways and records the times in
/// `cache`. Fails with a message on stderr (no GPU, a failed run).
mlir::LogicalResult autotune(mlir::ModuleOp graph, const mlir::kiln::PlanOptions &options,
                             const BuildDeviceCode &buildDeviceCode,
                             mlir::kiln::TuningCache &cache);

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_AUTOTUNE_H
