//===- FusionUtils.cpp - what every fusion pass shares --------------------===//

#include "FusionUtils.h"

#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::kiln;

namespace mlir {
namespace kiln {
namespace fusion {

bool isElementwise(Operation *op) { return isElementwiseOp(op); }

static bool isRowMajor(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  auto encoding =
      tensor ? llvm::dyn_cast_or_null<TensorEncodingAttr>(tensor.getEncoding()) : nullptr;
  return encoding && encoding.isRowMajor();
}

bool isFreeDataMovement(Operation *op) {
  if (auto broadcast = llvm::dyn_cast<BroadcastOp>(op))
    return isRowMajor(broadcast.getInput().getType()) && isRowMajor(broadcast.getType());
  if (auto reshape = llvm::dyn_cast<ReshapeOp>(op))
    return isRowMajor(reshape.getInput().getType()) && isRowMajor(reshape.getType());
  // Reading another layout is index arithmetic in the loop kernel.
  if (auto relayout = llvm::dyn_cast<RelayoutOp>(op))
    return isRowMajor(relayout.getType());
  return false;
}

bool isCheapToDuplicate(Operation *op) {
  return llvm::isa<NegOp, AbsOp, ReluOp, NotOp, SignOp, FloorOp, CeilOp, RoundOp, AddOp, SubOp,
                   MulOp, MaxOp, MinOp, AndOp, OrOp, EqOp, NeOp, LtOp, LeOp, GtOp, GeOp,
                   SelectOp, CastOp>(op) ||
         isFreeDataMovement(op);
}

std::string whyNotDuplicated(Operation *op) {
  if (!isCheapToDuplicate(op))
    return "it has users outside the region and is too expensive to compute twice";
  // A copy would read the contraction's result, which would then have two
  // users, and the matmul or convolution would lose its epilogue.
  if (llvm::any_of(op->getOperands(), [](Value v) {
        return llvm::isa_and_nonnull<MatMulOp, Conv2dOp>(v.getDefiningOp());
      }))
    return "it is the epilogue of a matmul or convolution, which a copy would take away";
  return "";
}

bool isReductionAnchor(Operation *op) { return hasRowReductionKernel(op); }

bool isFusionCandidate(Operation *op) {
  return op && llvm::isa_and_nonnull<func::FuncOp>(op->getParentOp()) &&
         llvm::isa_and_nonnull<KilnDialect>(op->getDialect()) &&
         !llvm::isa<ConstantOp, WeightOp, FusionOp, TransferOp, RelayoutOp>(op);
}

bool isInlinableConstant(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense = constant ? llvm::dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  return dense && dense.isSplat();
}

std::string shortName(Operation *op) { return op->getName().stripDialect().str(); }

std::string lineOf(Operation *op) {
  if (auto loc = llvm::dyn_cast<FileLineColLoc>(op->getLoc()))
    return (loc.getFilename().str() + ":" + std::to_string(loc.getLine()));
  if (auto loc = llvm::dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return "";
}

bool Group::ownsAllUsers(Operation *op) const {
  for (Operation *user : op->getUsers())
    if (!moved.contains(user))
      return false;
  return true;
}

/// The members of a group in program order.
static SmallVector<Operation *> inProgramOrder(const Group &group) {
  SmallVector<Operation *> ops(group.moved.begin(), group.moved.end());
  ops.append(group.duplicated.begin(), group.duplicated.end());
  llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ops;
}

/// The values the region takes as block arguments, in first-use order.
static SmallVector<Value> regionInputs(const Group &group) {
  llvm::SetVector<Value> inputs;
  for (Operation *op : inProgramOrder(group))
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if ((def && group.contains(def)) || isInlinableConstant(operand))
        continue;
      inputs.insert(operand);
    }
  return inputs.takeVector();
}

int64_t countInputs(const Group &group) {
  return static_cast<int64_t>(regionInputs(group).size());
}

/// True when a value that leaves the group reaches, through ops outside it,
/// a value the group takes as input: the region would depend on itself.
static bool createsCycle(const Group &group) {
  llvm::SmallPtrSet<Operation *, 16> inputDefs;
  for (Value input : regionInputs(group))
    if (Operation *def = input.getDefiningOp())
      inputDefs.insert(def);
  if (group.moved.empty())
    return false;
  // Only ops before the group's last op can lead back into it: an input is
  // defined before the op that reads it, and users come after their
  // producers. Stopping there keeps each check local to the region's span
  // instead of walking everything downstream (quadratic on long chains).
  Operation *last = inProgramOrder(group).back();
  auto relevant = [&](Operation *user) {
    return user->getBlock() == last->getBlock() && user->isBeforeInBlock(last);
  };
  SmallVector<Operation *> work;
  llvm::SmallPtrSet<Operation *, 32> seen;
  for (Operation *op : group.moved)
    for (Operation *user : op->getUsers())
      if (!group.moved.contains(user) && relevant(user) && seen.insert(user).second)
        work.push_back(user);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (group.moved.contains(op) || inputDefs.contains(op))
      return true;
    for (Operation *user : op->getUsers())
      if (relevant(user) && seen.insert(user).second)
        work.push_back(user);
  }
  return false;
}

/// Most intermediate values alive at once when the body runs in program
/// order (inputs not counted: a kernel loads them as it needs them).
static int64_t peakLiveValues(const Group &group) {
  SmallVector<Operation *> ops = inProgramOrder(group);
  llvm::DenseMap<Operation *, size_t> position;
  for (auto [k, op] : llvm::enumerate(ops))
    position[op] = k;
  // A value is alive from its op until its last user in the region, whose
  // result may take its register; one used outside lives to the end.
  std::vector<int64_t> delta(ops.size() + 1, 0);
  for (auto [k, op] : llvm::enumerate(ops))
    for (Value result : op->getResults()) {
      size_t end = k + 1;
      for (Operation *user : result.getUsers()) {
        auto it = position.find(user);
        if (it != position.end())
          end = std::max(end, it->second);
        else if (group.moved.contains(op))
          end = ops.size();
      }
      ++delta[k];
      --delta[end];
    }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

static std::string deviceOf(Operation *op) {
  for (Type type : op->getResultTypes())
    if (auto tensor = llvm::dyn_cast<RankedTensorType>(type))
      if (auto encoding = llvm::dyn_cast_or_null<TensorEncodingAttr>(tensor.getEncoding()))
        return encoding.getDeviceString();
  return "";
}

std::string checkLegality(const Group &group, const Limits &limits) {
  if (static_cast<int64_t>(group.size()) > limits.maxOps)
    return "the region would hold " + std::to_string(group.size()) + " ops (max-ops=" +
           std::to_string(limits.maxOps) + ")";
  int64_t inputs = countInputs(group);
  if (inputs > limits.maxInputs)
    return "the region would take " + std::to_string(inputs) + " inputs (max-inputs=" +
           std::to_string(limits.maxInputs) + ")";
  std::string device;
  for (Operation *op : inProgramOrder(group)) {
    std::string here = deviceOf(op);
    if (!device.empty() && here != device)
      return "its ops are on different devices (" + device + " and " + here + ")";
    device = here;
  }
  int64_t live = peakLiveValues(group);
  if (live > limits.maxLive)
    return "the region would keep " + std::to_string(live) + " values alive at once (max-live=" +
           std::to_string(limits.maxLive) + ")";
  if (createsCycle(group))
    return "a value would leave the region and come back through an op outside it";
  return "";
}

FusionOp formRegion(const Group &group, FusionKind kind) {
  SmallVector<Operation *> ops = inProgramOrder(group);
  SmallVector<Value> inputs = regionInputs(group);
  SmallVector<Value> outputs;
  for (Operation *op : ops)
    if (group.moved.contains(op))
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !group.moved.contains(user); }))
          outputs.push_back(result);

  Operation *last = ops.back();
  OpBuilder builder(last);
  auto region = builder.create<FusionOp>(last->getLoc(), ValueRange(outputs).getTypes(), inputs,
                                         kind);
  Block *body = builder.createBlock(&region.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!mapping.contains(operand) && isInlinableConstant(operand))
        builder.clone(*operand.getDefiningOp(), mapping);
    builder.clone(*op, mapping);
  }
  SmallVector<Value> yielded;
  for (Value output : outputs)
    yielded.push_back(mapping.lookup(output));
  builder.create<YieldOp>(last->getLoc(), yielded);

  for (auto [output, result] : llvm::zip(outputs, region.getResults()))
    output.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !group.moved.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(ops))
    if (group.moved.contains(op))
      op->erase();

  // An outside op that used a region result before the region's position
  // (it sat between two members) moves after it.
  Block *block = region->getBlock();
  bool ordered = llvm::all_of(region->getUsers(), [&](Operation *user) {
    return user->getBlock() != block || region->isBeforeInBlock(user);
  });
  if (!ordered)
    sortTopologically(block);
  return region;
}

void remark(bool enabled, Operation *op, const llvm::Twine &message) {
  if (enabled)
    op->emitRemark(message);
}

void remark(bool enabled, Location loc, const llvm::Twine &message) {
  if (enabled)
    mlir::emitRemark(loc, message);
}

std::string describeBody(FusionOp region) {
  std::string s;
  for (Operation &op : region.getBody().front().without_terminator())
    if (!llvm::isa<ConstantOp>(op))
      s += (s.empty() ? "" : ", ") + shortName(&op);
  return s;
}

} // namespace fusion
} // namespace kiln
} // namespace mlir
