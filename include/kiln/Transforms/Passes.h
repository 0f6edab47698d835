//===- Passes.h - kiln graph passes -----------------------------*- C++ -*-===//

#ifndef KILN_TRANSFORMS_PASSES_H
#define KILN_TRANSFORMS_PASSES_H

#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Transforms/Passes.h.inc"

/// Marks a cast that kiln-quantized-weights keeps for the GEMM's tile loads
/// to dequantise (the constant folder leaves it alone).
constexpr llvm::StringLiteral kDequantizeInGemmAttr = "kiln.dequantize_in_gemm";

struct GraphOptions {
  /// Matmul kernels dequantise weight-only quantised weights in their loads.
  bool dequantizeInGemm = false;
  /// A remark for each quantised weight's treatment (the fusion report).
  bool quantizedReport = false;
  /// A remark with what constant folding did against its budget.
  bool foldReport = false;
  double foldBudgetSeconds = 60.0;
  int64_t foldBudgetBytes = int64_t(4) << 30;
};

/// The default graph pipeline of kilnc: canonicalize, quantised weights,
/// constant folding, canonicalize, CSE, dead-code elimination.
void buildDefaultGraphPipeline(OpPassManager &pm, const GraphOptions &options = {});

struct FusionOptions {
  /// Explain every fusion decision as a remark.
  bool report = false;
};

/// The fusion passes in kilnc's order, then dead-code elimination.
void buildFusionPipeline(OpPassManager &pm, const FusionOptions &options);

/// Registers the kiln passes, the MLIR passes the pipeline uses
/// (canonicalize, cse) and the "kiln-graph-pipeline" pipeline.
void registerAllKilnPasses();

} // namespace kiln
} // namespace mlir

#endif // KILN_TRANSFORMS_PASSES_H
