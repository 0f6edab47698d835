//===- DeadCodeElimination.cpp - erase unused ops and weights -------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNDEADCODEELIMINATION
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnDeadCodeEliminationPass
    : public ::mlir::kiln::impl::KilnDeadCodeEliminationBase<KilnDeadCodeEliminationPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      // Backwards: erasing a user may make its producers dead too.
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
        if (!isOpTriviallyDead(&op))
          continue;
        if (llvm::isa<ConstantOp, WeightOp>(op))
          ++numErasedWeights;
        else
          ++numErasedOps;
        op.erase();
      }
    }
  }
};

} // namespace
