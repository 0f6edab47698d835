//===- Pipeline.cpp - pass registration and the default pipeline ----------===//

#include "kiln/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::kiln::buildDefaultGraphPipeline(OpPassManager &pm, const GraphOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createCanonicalizerPass());
  KilnQuantizedWeightsOptions quantized;
  quantized.inGemm = options.dequantizeInGemm;
  quantized.report = options.quantizedReport;
  fn.addPass(createKilnQuantizedWeights(quantized));
  KilnConstantFoldOptions fold;
  fold.budgetSeconds = options.foldBudgetSeconds;
  fold.budgetBytes = options.foldBudgetBytes;
  fold.report = options.foldReport;
  fn.addPass(createKilnConstantFold(fold));
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  fn.addPass(createKilnDeadCodeElimination());
}

void mlir::kiln::buildFusionPipeline(OpPassManager &pm, const FusionOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  // Fixed patterns first, then anchored regions, then what is left: an op
  // joins the first region that takes it (docs/fusion.md).
  fn.addPass(createKilnFuseAttention(KilnFuseAttentionOptions{options.report}));
  fn.addPass(createKilnFuseSiblings(KilnFuseSiblingsOptions{options.report}));
  fn.addPass(createKilnFuseReductions(KilnFuseReductionsOptions{options.report}));
  fn.addPass(createKilnFuseEpilogues(KilnFuseEpiloguesOptions{options.report}));
  fn.addPass(createKilnFuseLoops(KilnFuseLoopsOptions{options.report}));
  // Duplicated producers whose every user took a copy are now dead, as are
  // the weights that horizontal fusion concatenated.
  fn.addPass(createKilnDeadCodeElimination());
}

void mlir::kiln::registerAllKilnPasses() {
  registerKilnPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  PassPipelineRegistration<>(
      "kiln-graph-pipeline",
      "The default graph pipeline of kilnc (canonicalize, kiln-quantized-weights, "
      "kiln-constant-fold, canonicalize, cse, kiln-dce)",
      [](OpPassManager &pm) { buildDefaultGraphPipeline(pm); });
  PassPipelineRegistration<>(
      "kiln-fusion-pipeline",
      "Every fusion pass in kilnc's order (kiln-fuse-attention, kiln-fuse-siblings, "
      "kiln-fuse-reductions, kiln-fuse-epilogues, kiln-fuse-loops, kiln-dce)",
      [](OpPassManager &pm) { buildFusionPipeline(pm, FusionOptions{}); });
}
