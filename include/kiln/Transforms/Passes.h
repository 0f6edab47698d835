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

/// The default graph pipeline of kilnc: canonicalize, constant folding,
/// canonicalize, CSE, dead-code elimination.
void buildDefaultGraphPipeline(OpPassManager &pm);

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
