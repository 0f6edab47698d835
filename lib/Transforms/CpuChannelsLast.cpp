//===- CpuChannelsLast.cpp - f32 convolution chains in NHWC on the CPU ----===//
//
// oneDNN's fast f32 convolution kernels read and write NHWC; on NCHW values
// every call reorders its input and its output (on the small CNN's first
// convolution, the reorder back took longer than the convolution). So
// --target=cpu keeps chains of convolutions and what runs between them
// (batch norm, ReLU, residual adds, max pooling) channels last, converting
// at the chain's edges only: what ONNX Runtime does with its NCHWc layout.
//
//===----------------------------------------------------------------------===//

#include "LayoutUtils.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNCPUCHANNELSLAST
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

bool isRowMajorF32(Type type, int64_t rank) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32() && tensor.getRank() == rank &&
         isStaticButBatch(tensor) && getEncoding(tensor) && getEncoding(tensor).isRowMajor();
}

bool isChannelsLast(Value value) { return mlir::kiln::isChannelsLast(value.getType()); }

/// An f32 4-D convolution oneDNN runs channels last: ungrouped, its filter
/// a constant of its own, its bias (if any) a row-major vector.
bool runsChannelsLast(Conv2dOp conv) {
  Value x = conv.getInput();
  return conv.getGroups() == 1 &&
         (isRowMajorF32(x.getType(), 4) ||
          (isChannelsLast(x) && llvm::cast<RankedTensorType>(x.getType()).getElementType().isF32())) &&
         isRowMajorF32(conv.getType(), 4) && isRowMajorF32(conv.getFilter().getType(), 4) &&
         isPrivateConstant(conv.getFilter()) &&
         (!conv.getBias() || isRowMajorF32(conv.getBias().getType(), 1));
}

/// An operand that broadcasts onto [N, C, H, W] the same in either layout:
/// a scalar, or one value per channel ([C], [C, 1, 1], [1, C, 1, 1]).
bool broadcastsPerChannel(Value operand, ArrayRef<int64_t> shape) {
  auto type = llvm::dyn_cast<RankedTensorType>(operand.getType());
  if (!type || !type.hasStaticShape() || !getEncoding(type) || !getEncoding(type).isRowMajor())
    return false;
  SmallVector<int64_t> aligned(4 - std::min<int64_t>(type.getRank(), 4), 1);
  if (type.getRank() > 4)
    return false;
  aligned.append(type.getShape().begin(), type.getShape().end());
  return aligned[0] == 1 && aligned[2] == 1 && aligned[3] == 1 &&
         (aligned[1] == 1 || aligned[1] == shape[1]);
}

struct KilnCpuChannelsLastPass
    : public ::mlir::kiln::impl::KilnCpuChannelsLastBase<KilnCpuChannelsLastPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    OpBuilder builder(&getContext());
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto conv = llvm::dyn_cast<Conv2dOp>(op); conv && runsChannelsLast(conv)) {
        conv.getInputMutable().assign(toChannelsLast(conv.getInput(), builder));
        conv.getFilter().setType(channelsLast(conv.getFilter().getType()));
        conv.getResult().setType(channelsLast(conv.getType()));
        chain.insert(conv.getResult());
        continue;
      }
      if (followsChannelsLast(op)) {
        // Operands of the result's rank share its layout (lower ranks
        // broadcast row-major): a constant of its own is retyped (its data
        // is logical), anything else converted.
        for (OpOperand &operand : op->getOpOperands()) {
          Value v = operand.get();
          if (llvm::cast<RankedTensorType>(v.getType()).getRank() != 4 || isChannelsLast(v))
            continue;
          if (isPrivateConstant(v) && !llvm::isa<BatchNormOp>(op))
            v.setType(channelsLast(v.getType()));
          else if (!llvm::isa<BatchNormOp>(op) || operand.getOperandNumber() == 0)
            operand.set(toChannelsLast(v, builder));
        }
        op->getResult(0).setType(channelsLast(op->getResult(0).getType()));
        chain.insert(op->getResult(0));
        continue;
      }
      // Any other reader, the function's results included: row-major.
      for (OpOperand &operand : op->getOpOperands())
        if (chain.contains(operand.get()))
          operand.set(toRowMajor(operand.get(), builder));
    }
  }

private:
  /// Whether `op` reads a channels-last value and can keep its result
  /// channels last: f32 elementwise ops whose other operands are of its
  /// shape or per-channel, max pooling, global average pooling.
  bool followsChannelsLast(Operation *op) {
    if (op->getNumResults() != 1 || op->getNumOperands() == 0)
      return false;
    if (!llvm::any_of(op->getOperands(), [&](Value v) { return chain.contains(v); }))
      return false;
    if (auto pool = llvm::dyn_cast<MaxPool2dOp>(op))
      return isChannelsLast(pool.getInput()) && isRowMajorF32(pool.getType(), 4) &&
             llvm::all_of(pool.getDilations(), [](int64_t d) { return d == 1; });
    if (auto pool = llvm::dyn_cast<GlobalAvgPoolOp>(op))
      return isChannelsLast(pool.getInput()) && isRowMajorF32(pool.getType(), 4);
    if (!isElementwiseOp(op) || !isRowMajorF32(op->getResult(0).getType(), 4))
      return false;
    auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    ArrayRef<int64_t> shape = resultType.getShape();
    if (llvm::isa<BatchNormOp>(op)) // its other operands are per channel by definition
      return isChannelsLast(op->getOperand(0)) &&
             llvm::all_of(op->getOperands().drop_front(), [](Value v) {
               return isRowMajorF32(v.getType(), 1);
             });
    return llvm::all_of(op->getOperands(), [&](Value operand) {
      auto type = llvm::cast<RankedTensorType>(operand.getType());
      if (!type.getElementType().isF32())
        return false;
      if (getDimSizes(type) == getDimSizes(resultType))
        return isChannelsLast(operand) || getEncoding(type).isRowMajor();
      return broadcastsPerChannel(operand, shape);
    });
  }

  /// `value` channels last: itself, the channels-last value a conversion
  /// back came from, or one conversion per value.
  Value toChannelsLast(Value value, OpBuilder &builder) {
    if (isChannelsLast(value))
      return value;
    if (auto back = value.getDefiningOp<RelayoutOp>(); back && chain.contains(back.getInput()))
      return back.getInput();
    auto [it, isNew] = convertedIn.try_emplace(value, Value());
    if (isNew) {
      builder.setInsertionPointAfterValue(value);
      it->second = builder.create<RelayoutOp>(value.getLoc(), value,
                                              builder.getDenseI64ArrayAttr(kChannelsLast));
      chain.insert(it->second);
    }
    return it->second;
  }

  /// `value` row-major: one conversion back per value, after it.
  Value toRowMajor(Value value, OpBuilder &builder) {
    auto [it, isNew] = convertedBack.try_emplace(value, Value());
    if (isNew) {
      builder.setInsertionPointAfterValue(value);
      it->second = builder.create<RelayoutOp>(value.getLoc(), value, builder.getDenseI64ArrayAttr({}));
    }
    return it->second;
  }

  /// Each value's one conversion to channels last, and back to row-major.
  llvm::DenseMap<Value, Value> convertedIn, convertedBack;
  /// The values this pass made channels last (a model's own NHWC values
  /// are left as they are).
  llvm::DenseSet<Value> chain;
};

} // namespace
