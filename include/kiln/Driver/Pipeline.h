//===- Pipeline.h - the passes a compile runs, from its options -*- C++ -*-===//
//
// A compile runs two pass managers: the graph pipeline (optimise; for GPU
// targets assign layouts and place ops; fuse), after which kilnc reports
// and may autotune, then (for plans, executables and kernels) the lowering
// to an execution plan. Each stage's own options come from CompileOptions
// here, so the flags are interpreted in one place.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_PIPELINE_H
#define KILN_DRIVER_PIPELINE_H

#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/Driver/CompileOptions.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace kiln {
namespace driver {

/// The graph passes: kiln's default pipeline, then for GPU targets
/// kiln-assign-layouts and kiln-place, then (unless options.fusion is off)
/// the fusion passes, with remarks if options.fusionReport.
void buildGraphPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// The lowering's options: streams from the schedule, and for GPU targets
/// the implementation choice for the first --arch.
mlir::kiln::PlanOptions planOptions(const CompileOptions &options);

/// Graph IR to execution plan with planOptions(options).
void buildPlanPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// What generated kernels may do (--precision).
mlir::kiln::CodeGenOptions codeGenOptions(const CompileOptions &options);

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_PIPELINE_H
