//===- Pipeline.cpp - pass registration and the default pipeline ----------===//

#include "kiln/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::kiln::buildDefaultGraphPipeline(OpPassManager &pm) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createKilnConstantFold());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  fn.addPass(createKilnDeadCodeElimination());
}

void mlir::kiln::registerAllKilnPasses() {
  registerKilnPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  PassPipelineRegistration<>(
      "kiln-graph-pipeline",
      "The default graph pipeline of kilnc (canonicalize, kiln-constant-fold, "
      "canonicalize, cse, kiln-dce)",
      buildDefaultGraphPipeline);
}
