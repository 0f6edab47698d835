//===- ConstantFold.cpp - evaluate ops on constant operands ---------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/Reference/Tensor.h"
#include "kiln/Transforms/OpEvaluator.h"
#include "kiln/Transforms/Passes.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNCONSTANTFOLD
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The literal behind a constant or weight, or null.
ElementsAttr getLiteral(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto constant = llvm::dyn_cast_or_null<ConstantOp>(def))
    return constant.getValue();
  if (auto weight = llvm::dyn_cast_or_null<WeightOp>(def))
    return weight.getValue();
  return {};
}

struct KilnConstantFoldPass
    : public ::mlir::kiln::impl::KilnConstantFoldBase<KilnConstantFoldPass> {
  using Base::Base;

  void runOnOperation() override {
    // Producers come before consumers in a block, so one forward sweep folds
    // whole constant chains.
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (llvm::isa_and_nonnull<KilnDialect>(op->getDialect()) &&
          !llvm::isa<ConstantOp, WeightOp>(op) && op->getNumResults() == 1)
        candidates.push_back(op);
    });
    for (Operation *op : candidates)
      tryFold(op);
  }

  void tryFold(Operation *op) {
    SmallVector<ElementsAttr> operands;
    int64_t largestOperandBytes = 0;
    for (Value operand : op->getOperands()) {
      ElementsAttr literal = getLiteral(operand);
      if (!literal)
        return;
      operands.push_back(literal);
      auto type = llvm::cast<RankedTensorType>(literal.getType());
      if (auto dtype = toReferenceDType(type.getElementType()))
        largestOperandBytes = std::max(
            largestOperandBytes, type.getNumElements() * ::kiln::ref::byteWidth(*dtype));
    }
    auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    std::optional<::kiln::ref::DType> dtype =
        toReferenceDType(resultType.getElementType());
    if (!dtype)
      return;
    int64_t bytes =
        resultType.getNumElements() * ::kiln::ref::byteWidth(*dtype);
    if (bytes > maxResultBytes || largestOperandBytes > maxResultBytes ||
        estimateEvaluationCost(op) > maxFlops) {
      ++numTooLarge;
      return;
    }
    FailureOr<DenseElementsAttr> value = evaluateOp(op, operands);
    if (failed(value))
      return;
    OpBuilder builder(op);
    auto constant =
        builder.create<ConstantOp>(op->getLoc(), resultType, *value);
    op->getResult(0).replaceAllUsesWith(constant.getResult());
    op->erase();
    ++numFolded;
  }
};

} // namespace
