//===- EpilogueFusion.cpp - consumers into a matmul or convolution --------===//
//
// The kernel of a matmul or convolution holds its result tile in registers
// before the one store; every elementwise op applied to that result (bias,
// activation, scaling, residual, cast) can run there instead of in a kernel
// of its own. The chain stops at a value with several users, so the
// contraction is never computed twice.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/OpClasses.h"

#include "kiln/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFUSEEPILOGUES
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::fusion;

namespace {

struct KilnFuseEpiloguesPass : public ::mlir::kiln::impl::KilnFuseEpiloguesBase<KilnFuseEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    Limits limits{maxOps, maxInputs, maxLive};
    SmallVector<Operation *> anchors;
    for (Operation &op : getOperation().getBody().front())
      if (isFusionCandidate(&op) && llvm::isa<MatMulOp, Conv2dOp>(op) && !isWindowOp(&op))
        anchors.push_back(&op);
    for (Operation *anchor : anchors)
      fuseEpilogue(anchor, limits);
  }

  void fuseEpilogue(Operation *anchor, const Limits &limits) {
    std::string name = shortName(anchor);
    SmallVector<AffineExpr> shape =
        getDimSizes(llvm::cast<RankedTensorType>(anchor->getResult(0).getType()));
    Group group;
    group.moved.insert(anchor);
    // A weight kiln-quantized-weights kept quantised for this matmul: its
    // dequantisation (cast, then the scale) runs in the GEMM's tile loads.
    std::string prologue;
    if (auto matmul = llvm::dyn_cast<MatMulOp>(anchor))
      if (auto mul = matmul.getRhs().getDefiningOp<MulOp>(); mul && mul->hasOneUse())
        for (Value factor : mul->getOperands())
          if (auto cast = factor.getDefiningOp<CastOp>();
              cast && cast->hasAttr(kDequantizeInGemmAttr) && cast->hasOneUse()) {
            group.moved.insert(cast);
            group.moved.insert(mul);
            prologue = "; its right operand is dequantised in its tile loads";
          }
    Operation *tail = anchor;
    std::string stop;
    while (true) {
      Value current = tail->getResult(0);
      if (current.use_empty())
        break;
      if (!current.hasOneUse()) {
        stop = "the result of '" + shortName(tail) + "' has " +
               std::to_string(std::distance(current.use_begin(), current.use_end())) +
               " users; fusing into each would compute the " + name + " again";
        break;
      }
      Operation *user = *current.getUsers().begin();
      if (llvm::isa<func::ReturnOp>(user)) {
        stop = "its result is a model output";
        break;
      }
      if (auto region = llvm::dyn_cast<FusionOp>(user)) {
        stop = std::string("its consumer is already in a ") +
               stringifyFusionKind(region.getKind()).str() + " region";
        break;
      }
      if (!isFusionCandidate(user) || !isElementwise(user)) {
        stop = "its consumer '" + shortName(user) + "' is not elementwise";
        break;
      }
      if (auto norm = llvm::dyn_cast<BatchNormOp>(user);
          norm && (!llvm::isa<Conv2dOp>(anchor) || norm.getInput() != current)) {
        stop = "batch_norm fuses only as the normalisation of a convolution's output";
        break;
      }
      if (getDimSizes(llvm::cast<RankedTensorType>(user->getResult(0).getType())) != shape) {
        stop = "its consumer '" + shortName(user) + "' broadcasts the result to a larger shape";
        break;
      }
      group.moved.insert(user);
      std::string problem = checkLegality(group, limits);
      if (!problem.empty()) {
        group.moved.remove(user);
        stop = "'" + shortName(user) + "' stays out: " + problem;
        break;
      }
      tail = user;
    }
    if (group.size() < 2) {
      remark(report, anchor, "epilogue fusion: '" + name + "' has no epilogue" +
                                 (stop.empty() ? std::string() : ": " + stop));
      return;
    }
    FusionKind kind =
        llvm::isa<MatMulOp>(anchor) ? FusionKind::MatmulEpilogue : FusionKind::ConvEpilogue;
    FusionOp region = formRegion(group, kind);
    remark(report, region, stringifyFusionKind(kind) + " region: " + describeBody(region) +
                               prologue +
                               (stop.empty() ? std::string() : "; stops because " + stop));
  }
};

} // namespace
