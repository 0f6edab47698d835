//===- FormSteps.cpp - graph ops to exec.step -----------------------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFORMSTEPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnFormStepsPass
    : public ::mlir::kiln::impl::KilnFormStepsBase<KilnFormStepsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> work;
    for (Operation &op : getOperation().getBody().getOps())
      if (llvm::isa_and_nonnull<KilnDialect>(op.getDialect()) &&
          !llvm::isa<ConstantOp, WeightOp>(op))
        work.push_back(&op);
    for (Operation *op : work)
      wrapInStep(op);
  }

  /// Replaces `op` by a step computing it; repeated operands become one
  /// step input.
  void wrapInStep(Operation *op) {
    SmallVector<Value> inputs;
    for (Value operand : op->getOperands())
      if (!llvm::is_contained(inputs, operand))
        inputs.push_back(operand);
    OpBuilder builder(op);
    auto step = builder.create<exec::StepOp>(
        op->getLoc(), op->getResultTypes(), inputs, /*stream=*/nullptr,
        /*event=*/nullptr, /*waits=*/nullptr, /*offsets=*/nullptr);
    Block *body = builder.createBlock(&step.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), op->getLoc()));
    Operation *inner = builder.clone(*op, mapping);
    builder.create<exec::YieldOp>(op->getLoc(), inner->getResults());
    op->replaceAllUsesWith(step.getResults());
    op->erase();
  }
};

} // namespace
