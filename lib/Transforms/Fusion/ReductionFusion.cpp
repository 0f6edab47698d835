//===- ReductionFusion.cpp - elementwise ops into a reduction -------------===//
//
// A reduction or row-wise normalisation reads every element of its input
// once per pass over a row; the elementwise ops that compute that input can
// run as the elements are loaded (input fusion, as XLA calls it), and the
// elementwise ops applied to its result can run before the store. In a
// transformer this makes "bias + residual + layer norm" one kernel.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "LoopGrowth.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Transforms/Passes.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFUSEREDUCTIONS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::fusion;

namespace {

struct KilnFuseReductionsPass : public ::mlir::kiln::impl::KilnFuseReductionsBase<KilnFuseReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    Limits limits{maxOps, maxInputs, maxLive};
    SmallVector<Operation *> anchors;
    for (Operation &op : getOperation().getBody().front())
      if (isFusionCandidate(&op) && isReductionAnchor(&op))
        anchors.push_back(&op);
    for (Operation *anchor : anchors)
      fuseAround(anchor, limits);
  }

  void fuseAround(Operation *anchor, const Limits &limits) {
    std::string name = shortName(anchor);
    Group group;
    group.moved.insert(anchor);

    // Prologue: what computes the data operand (scale and bias of a layer
    // norm are small and read once per row; they stay inputs).
    std::vector<Rejection> rejected =
        growProducers(group, anchor, limits, /*firstOperandOnly=*/true);
    for (const Rejection &r : rejected)
      if (!group.contains(r.producer))
        remark(report, r.producer,
               "reduction fusion: '" + shortName(r.producer) + "' not fused into the region of '" +
                   name + "': " + r.reason);

    // Epilogue: single-user elementwise consumers at the result's shape.
    SmallVector<AffineExpr> shape =
        getDimSizes(llvm::cast<RankedTensorType>(anchor->getResult(0).getType()));
    Operation *tail = anchor;
    while (true) {
      Value current = tail->getResult(0);
      if (!current.hasOneUse())
        break;
      Operation *user = *current.getUsers().begin();
      if (!isFusionCandidate(user) || !isElementwise(user) || llvm::isa<BatchNormOp>(user) ||
          getDimSizes(llvm::cast<RankedTensorType>(user->getResult(0).getType())) != shape)
        break;
      group.moved.insert(user);
      std::string problem = checkLegality(group, limits);
      if (!problem.empty()) {
        group.moved.remove(user);
        remark(report, user,
               "reduction fusion: '" + shortName(user) + "' not fused after '" + name + "': " +
                   problem);
        break;
      }
      tail = user;
    }

    if (group.size() < 2) {
      remark(report, anchor,
             "reduction fusion: '" + name + "' stays a kernel of its own: no elementwise "
             "producer or consumer to fuse");
      return;
    }
    FusionOp region = formRegion(group, FusionKind::Reduction);
    remark(report, region, "reduction region: " + describeBody(region));
  }
};

} // namespace
