//===- LoopFusion.cpp - elementwise trees into one loop -------------------===//
//
// Grows a region from each remaining elementwise op, last op first, towards
// its producers: a producer joins when the region owns all its users, or is
// duplicated into the region when it is cheap to recompute. What joins no
// region stays one kernel of its own.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "LoopGrowth.h"

#include "kiln/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFUSELOOPS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::fusion;

namespace {

struct KilnFuseLoopsPass : public ::mlir::kiln::impl::KilnFuseLoopsBase<KilnFuseLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    Limits limits{maxOps, maxInputs, maxLive};
    SmallVector<Operation *> candidates;
    for (Operation &op : getOperation().getBody().front())
      if (isFusionCandidate(&op) && isLoopFusible(&op))
        candidates.push_back(&op);
    // Ops already moved into a region (erased; their addresses may be
    // reused, but never by a later candidate, which is still alive).
    llvm::SmallPtrSet<Operation *, 32> fused;
    for (Operation *root : llvm::reverse(candidates)) {
      if (fused.contains(root))
        continue;
      Group group;
      group.moved.insert(root);
      std::vector<Rejection> rejected = growProducers(group, root, limits);
      for (const Rejection &r : rejected)
        if (!group.contains(r.producer))
          remark(report, r.producer,
                 "loop fusion: '" + shortName(r.producer) + "' not fused into the region of '" +
                     shortName(root) + "': " + r.reason);
      if (group.size() < 2) {
        remark(report, root, "loop fusion: '" + shortName(root) +
                                 "' stays a kernel of its own: no elementwise producer to fuse");
        continue;
      }
      for (Operation *op : group.moved)
        fused.insert(op);
      FusionOp region = formRegion(group, FusionKind::Loop);
      remark(report, region, "loop region: " + describeBody(region));
    }
  }
};

} // namespace
