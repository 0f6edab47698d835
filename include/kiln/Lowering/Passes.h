//===- Passes.h - graph to execution plan -----------------------*- C++ -*-===//

#ifndef KILN_LOWERING_PASSES_H
#define KILN_LOWERING_PASSES_H

#include "kiln/Exec/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/Passes.h.inc"

/// How the plan trades memory against concurrency.
struct PlanOptions {
  /// Most streams; 1 gives a serial plan with the lowest peak memory.
  int64_t maxStreams = 4;
  int64_t alignment = 64;
  /// Choose library calls or generated kernels (GPU targets only).
  bool selectImplementations = false;
  KilnSelectImplementationsOptions implementation;
};

/// Graph IR to execution plan: form steps, (for GPU targets) select
/// implementations, assign streams, assign buffers.
void buildExecPlanPipeline(OpPassManager &pm, const PlanOptions &options);

/// Registers the lowering passes and the "kiln-exec-plan" pipeline.
void registerAllKilnLoweringPasses();

} // namespace kiln
} // namespace mlir

#endif // KILN_LOWERING_PASSES_H
