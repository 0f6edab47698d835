//===- Pipeline.cpp - the passes a compile runs, from its options ---------===//

#include "kiln/Driver/Pipeline.h"

#include "kiln/Transforms/Passes.h"

#include <algorithm>

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace kiln {
namespace driver {

void buildGraphPipeline(OpPassManager &pm, const CompileOptions &options) {
  mlir::kiln::GraphOptions graph;
  // Generated matmul kernels dequantise int8 weights in their tile loads
  // (once epilogue fusion has put the dequantisation in the matmul's region).
  graph.dequantizeInGemm = options.target != Target::CPU && options.fusion;
  graph.quantizedReport = options.fusionReport;
  graph.foldReport = true;
  graph.foldBudgetSeconds = options.foldBudgetSeconds;
  graph.foldBudgetBytes = options.foldBudgetBytes;
  // Gradients first (a model's kiln.gradient ops, then the loss's backward
  // graph): every pass after treats them as any graph.
  pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnExpandGradients());
  if (!options.gradLoss.empty())
    pm.nest<func::FuncOp>().addPass(
        mlir::kiln::createKilnGrad({options.gradLoss, options.trainable}));
  if (options.train) {
    mlir::kiln::KilnOptimizerOptions step;
    step.optimizer = options.optimizer;
    step.lr = options.learningRate;
    step.weightDecay = options.weightDecay;
    pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnOptimizer(step));
  }
  mlir::kiln::buildDefaultGraphPipeline(pm, graph);
  // What the backward pass recomputes, on the graph as folded and CSE'd
  // (CSE would merge the clones back) and before fusion, which then fuses
  // the recomputed ops into the backward kernels that read them.
  if (options.memoryBudget) {
    mlir::kiln::KilnRematerializeOptions remat;
    remat.loss = options.gradLoss;
    remat.budget = *options.memoryBudget;
    remat.report = true;
    pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnRematerialize(remat));
  }
  // (Over symbolic sizes the GPU layout and placement passes leave the
  // function as it is; the CPU's take a dynamic batch.)
  if (options.target != Target::CPU) {
    // Row-major inside (what the kernels and cuBLASLt read and write),
    // then the GPU gets every op it has code for; the host the rest.
    pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnAssignLayouts());
    mlir::kiln::KilnPlaceOptions place;
    place.noHostFallback = options.noHostFallback;
    place.hostOps = options.hostOps;
    pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnPlace(place));
  } else {
    // Batch norm into the convolutions' filters; then, as oneDNN's
    // convolutions read and write NHWC, chains of them stay so (over a
    // static image; the batch may be dynamic).
    pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnFoldBatchNorm());
    pm.nest<func::FuncOp>().addPass(mlir::kiln::createKilnCpuChannelsLast());
  }
  if (options.fusion) {
    mlir::kiln::FusionOptions fusion;
    fusion.report = options.fusionReport;
    mlir::kiln::buildFusionPipeline(pm, fusion);
  }
}

mlir::kiln::PlanOptions planOptions(const CompileOptions &options) {
  mlir::kiln::PlanOptions plan;
  // On the CPU every step spreads over all the cores: steps on two streams
  // at once would only contend (each stream's OpenMP team spinning against
  // the other's), so one stream unless asked; GPUs overlap up to 4.
  int64_t streams = options.maxStreams.value_or(options.target == Target::CPU ? 1 : 4);
  // A memory budget asks for memory over concurrency, as min-memory does:
  // recomputed ops on a stream of their own would live alongside the
  // forward pass instead of after it.
  bool forMemory = options.schedule == Schedule::MinMemory ||
                   (options.memoryBudget && !options.maxStreams);
  plan.maxStreams = forMemory ? 1 : streams;
  if (options.target != Target::CPU) {
    // cuda-emu makes the same choices as cuda, so it runs what the GPU
    // would (library calls emulated on the host).
    plan.selectImplementations = true;
    mlir::kiln::KilnSelectImplementationsOptions &impl = plan.implementation;
    impl.arch = options.archs.empty() ? 0 : parseArch(options.archs.front()).value_or(0);
    impl.precision = stringifyPrecision(options.precision).str();
    impl.deterministic = options.deterministic;
    impl.workspaceLimit = options.workspaceLimit;
    impl.impl = stringifyImplementation(options.implementation).str();
    impl.tuningCache = options.tuningCache;
  }
  return plan;
}

void buildPlanPipeline(OpPassManager &pm, const CompileOptions &options) {
  mlir::kiln::buildExecPlanPipeline(pm, planOptions(options));
}

mlir::kiln::CodeGenOptions codeGenOptions(const CompileOptions &options) {
  mlir::kiln::CodeGenOptions codeGen;
  codeGen.allowTf32 = options.precision == Precision::Tf32;
  codeGen.placed = options.target != Target::CPU;
  codeGen.mmaSliceK = options.mmaSliceK;
  codeGen.mmaStages = options.mmaStages;
  codeGen.mmaBlocksPerSM = options.mmaBlocksPerSM;
  codeGen.mmaTileN = options.mmaTileN;
  codeGen.attentionRowsPerWarp = options.attentionRowsPerWarp;
  codeGen.attentionBlocksPerSM = options.attentionBlocksPerSM;
  for (const std::string &arch : options.archs)
    if (std::optional<unsigned> cc = parseArch(arch))
      codeGen.minArch = std::min(codeGen.minArch, *cc);
  return codeGen;
}

} // namespace driver
} // namespace kiln
