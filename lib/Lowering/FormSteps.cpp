//===- FormSteps.cpp - graph ops to exec.step -----------------------------===//
//
// One step per kernel: a `kiln.fusion` region becomes one step whose body is
// the region's body, any other graph op one step of its own.
//
//===----------------------------------------------------------------------===//

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
    for (Operation &op : getOperation().getBody().getOps()) {
      // What a gradient stands for is the ops computing its value: no step
      // computes it (and the passes before may have changed those ops).
      if (llvm::isa<GradientOp>(op)) {
        op.emitError("kiln.gradient must be expanded by kiln-expand-gradients before any other "
                     "pass (kilnc runs it first)");
        return signalPassFailure();
      }
      if (llvm::isa_and_nonnull<KilnDialect>(op.getDialect()) &&
          !llvm::isa<ConstantOp, WeightOp>(op))
        work.push_back(&op);
    }
    for (Operation *op : work) {
      if (auto fusion = llvm::dyn_cast<FusionOp>(op))
        stepFromRegion(fusion);
      else
        wrapInStep(op);
    }
  }

  /// Replaces `op` by a step computing it; repeated operands become one
  /// step input.
  void wrapInStep(Operation *op) {
    SmallVector<Value> inputs;
    for (Value operand : op->getOperands())
      if (!llvm::is_contained(inputs, operand))
        inputs.push_back(operand);
    OpBuilder builder(op);
    auto step = createStep(builder, op->getLoc(), op->getResultTypes(), inputs, nullptr);
    Block *body = builder.createBlock(&step.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), op->getLoc()));
    Operation *inner = builder.clone(*op, mapping);
    builder.create<exec::YieldOp>(op->getLoc(), inner->getResults());
    op->replaceAllUsesWith(step.getResults());
    op->erase();
  }

  /// Replaces a fusion region by a step that takes over its body.
  void stepFromRegion(FusionOp fusion) {
    OpBuilder builder(fusion);
    auto step = createStep(builder, fusion.getLoc(), fusion.getResultTypes(),
                           fusion.getInputs(),
                           builder.getStringAttr(stringifyFusionKind(fusion.getKind())));
    step.getBody().takeBody(fusion.getBody());
    // Constants become executable weights, so they are step inputs.
    Block &body = step.getBody().front();
    SmallVector<Value> inputs(fusion.getInputs());
    for (ConstantOp constant : llvm::make_early_inc_range(body.getOps<ConstantOp>())) {
      constant->moveBefore(step);
      inputs.push_back(constant.getResult());
      constant.getResult().replaceAllUsesWith(
          body.addArgument(constant.getType(), constant.getLoc()));
    }
    step.getInputsMutable().assign(inputs);
    auto yield = llvm::cast<YieldOp>(step.getBody().front().getTerminator());
    builder.setInsertionPoint(yield);
    builder.create<exec::YieldOp>(yield.getLoc(), yield.getValues());
    yield.erase();
    fusion.replaceAllUsesWith(step.getResults());
    fusion.erase();
  }

  static exec::StepOp createStep(OpBuilder &builder, Location loc, TypeRange results,
                                 ValueRange inputs, StringAttr kind) {
    return builder.create<exec::StepOp>(loc, results, inputs, /*stream=*/nullptr,
                                        /*event=*/nullptr, /*waits=*/nullptr,
                                        /*offsets=*/nullptr, kind);
  }
};

} // namespace
