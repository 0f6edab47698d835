//===- Pipeline.cpp - lowering pass registration --------------------------===//

#include "kiln/Lowering/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::kiln::buildExecPlanPipeline(OpPassManager &pm, const PlanOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createKilnFormSteps());
  if (options.selectImplementations)
    fn.addPass(createKilnSelectImplementations(options.implementation));
  fn.addPass(createKilnAssignStreams(KilnAssignStreamsOptions{options.maxStreams}));
  fn.addPass(createKilnAssignBuffers(KilnAssignBuffersOptions{options.alignment}));
}

void mlir::kiln::registerAllKilnLoweringPasses() {
  registerKilnLoweringPasses();
  PassPipelineRegistration<>(
      "kiln-exec-plan",
      "Graph IR to execution plan (kiln-form-steps, kiln-assign-streams, "
      "kiln-assign-buffers) with default options",
      [](OpPassManager &pm) { buildExecPlanPipeline(pm, PlanOptions{}); });
}
