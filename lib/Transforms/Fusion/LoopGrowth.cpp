//===- LoopGrowth.cpp - growing a region through elementwise producers ----===//

#include "LoopGrowth.h"

using namespace mlir;
using namespace mlir::kiln;

namespace mlir {
namespace kiln {
namespace fusion {

std::vector<Rejection> growProducers(Group &group, Operation *from, const Limits &limits,
                                     bool firstOperandOnly) {
  std::vector<Rejection> rejected;
  SmallVector<Operation *> work{from};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    auto operands = op->getOperands();
    if (op == from && firstOperandOnly)
      operands = operands.take_front(1);
    for (Value operand : operands) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || group.contains(producer) || !isFusionCandidate(producer) ||
          !isLoopFusible(producer))
        continue;
      // A duplicated op stays in the graph too, still reading its operands,
      // so its producers can only be duplicated as well.
      bool move = !group.duplicated.contains(op) && group.ownsAllUsers(producer);
      if (!move) {
        std::string why = whyNotDuplicated(producer);
        if (!why.empty()) {
          rejected.push_back({producer, why});
          continue;
        }
      }
      if (move)
        group.moved.insert(producer);
      else
        group.duplicated.insert(producer);
      std::string problem = checkLegality(group, limits);
      if (!problem.empty()) {
        if (move)
          group.moved.remove(producer);
        else
          group.duplicated.remove(producer);
        rejected.push_back({producer, problem});
        continue;
      }
      work.push_back(producer);
    }
  }
  // A duplicated op whose other users all joined later is simply moved.
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : SmallVector<Operation *>(group.duplicated.begin(),
                                                  group.duplicated.end()))
      if (group.ownsAllUsers(op)) {
        group.duplicated.remove(op);
        group.moved.insert(op);
        changed = true;
      }
  }
  return rejected;
}

} // namespace fusion
} // namespace kiln
} // namespace mlir
