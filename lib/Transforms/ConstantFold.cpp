//===- ConstantFold.cpp - evaluate ops on constant operands ---------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/Tensor.h"
#include "kiln/Transforms/OpEvaluator.h"
#include "kiln/Transforms/Passes.h"

#include <chrono>
#include <cstdio>

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
    start = std::chrono::steady_clock::now();
    estimatedSeconds = 0.0;
    bytesFolded = 0;
    folded = 0;
    overBudget = 0;
    // Producers come before consumers in a block, so one forward sweep folds
    // whole constant chains.
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (llvm::isa_and_nonnull<KilnDialect>(op->getDialect()) &&
          !llvm::isa<ConstantOp, WeightOp>(op) && op->getNumResults() == 1 &&
          !op->hasAttr(kDequantizeInGemmAttr) &&
          // A literal has one size: a result of symbolic size is computed
          // at run time (a broadcast of a constant to a dynamic shape).
          !hasSymbolicSizes(op->getResult(0).getType()))
        candidates.push_back(op);
    });
    for (Operation *op : candidates)
      tryFold(op);
    if (report && (folded || overBudget))
      getOperation().emitRemark()
          << "constant folding: " << folded << " ops into " << bytesFolded
          << " bytes of constants in " << formatted("%.2f", elapsed()) << " s (budget "
          << formatted("%g", budgetSeconds) << " s and " << static_cast<int64_t>(budgetBytes)
          << " bytes)"
          << (overBudget ? "; " + std::to_string(overBudget) + " left over budget" : "");
  }

  static std::string formatted(const char *format, double value) {
    char text[32];
    std::snprintf(text, sizeof(text), format, value);
    return text;
  }

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void tryFold(Operation *op) {
    SmallVector<ElementsAttr> operands;
    // The reference evaluator holds every operand and the result as
    // doubles (a splat operand too): that memory must fit the budget left.
    int64_t evaluationBytes =
        llvm::cast<RankedTensorType>(op->getResult(0).getType()).getNumElements() * 8;
    for (Value operand : op->getOperands()) {
      ElementsAttr literal = getLiteral(operand);
      if (!literal)
        return;
      operands.push_back(literal);
      evaluationBytes += llvm::cast<RankedTensorType>(literal.getType()).getNumElements() * 8;
    }
    auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    std::optional<::kiln::ref::DType> dtype = toReferenceDType(resultType.getElementType());
    if (!dtype)
      return;
    int64_t bytes = resultType.getNumElements() * ::kiln::ref::byteWidth(*dtype);
    // The reference evaluator does about 1e8 multiply-adds a second: an op
    // whose estimate passes the time left is not started.
    constexpr double kEvaluatedPerSecond = 1e8;
    double seconds = static_cast<double>(estimateEvaluationCost(op)) / kEvaluatedPerSecond;
    // The time budget is spent by the estimate, not the clock, so a compile
    // folds the same ops however loaded the machine is.
    if (bytesFolded + bytes > budgetBytes || evaluationBytes > budgetBytes - bytesFolded ||
        estimatedSeconds + seconds > budgetSeconds) {
      op->emitWarning("computes from weights and constants alone but is not folded: the folding "
                      "budget (")
          << formatted("%g", budgetSeconds) << " s, " << static_cast<int64_t>(budgetBytes)
          << " bytes) is spent; it runs every time the model does";
      ++overBudget;
      ++numOverBudget;
      return;
    }
    FailureOr<DenseElementsAttr> value = evaluateOp(op, operands);
    if (failed(value))
      return;
    estimatedSeconds += seconds;
    OpBuilder builder(op);
    auto constant = builder.create<ConstantOp>(op->getLoc(), resultType, *value);
    op->getResult(0).replaceAllUsesWith(constant.getResult());
    op->erase();
    bytesFolded += value->isSplat() ? 0 : bytes;
    ++folded;
    ++numFolded;
  }

  std::chrono::steady_clock::time_point start;
  double estimatedSeconds = 0.0;
  int64_t bytesFolded = 0, folded = 0, overBudget = 0;
};

} // namespace
