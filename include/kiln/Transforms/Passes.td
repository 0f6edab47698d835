//===- Passes.td - kiln graph passes -----------------------*- tablegen -*-===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnConstantFold : Pass<"kiln-constant-fold", "func::FuncOp"> {
  let summary = "Evaluate every op whose operands are all constants or weights";
  let description = [{
    Runs the reference evaluator (the same code as the CPU backend) on every
    kiln op whose operands are all `kiln.constant` or `kiln.weight`, and
    replaces it with a `kiln.constant`. Ops with an operand or result larger
    than `max-result-bytes` are left alone, so folding never multiplies a
    model's size or materialises a huge splat; so are ops whose evaluation
    would take more than `max-flops` multiply-adds.
  }];
  let options = [
    Option<"maxResultBytes", "max-result-bytes", "int64_t",
           /*default=*/"16 * 1024 * 1024",
           "Largest operand or result of a folded op, in bytes">,
    Option<"maxFlops", "max-flops", "int64_t", /*default=*/"1000000000",
           "Largest evaluation cost, in multiply-adds (matmul, conv2d)">,
  ];
  let statistics = [
    Statistic<"numFolded", "num-folded", "Ops replaced by constants">,
    Statistic<"numTooLarge", "num-too-large",
              "Ops left alone because of the size or cost limit">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

def KilnDeadCodeElimination : Pass<"kiln-dce", "func::FuncOp"> {
  let summary = "Remove ops and weights whose results are never used";
  let description = [{
    Walks each function body backwards and erases side-effect-free ops whose
    results have no uses, so a chain that only fed a dead value goes in one
    pass. Function arguments (the model's inputs) are part of the signature
    and are kept even when unused.
  }];
  let statistics = [
    Statistic<"numErasedOps", "num-erased-ops", "Dead ops erased">,
    Statistic<"numErasedWeights", "num-erased-weights",
              "Dead constants and weights erased">,
  ];
}

#endif // KILN_TRANSFORMS_PASSES_TD
