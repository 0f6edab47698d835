//===- AssignLayouts.cpp - row-major inside, declared layouts at the edge -===//

#include "LayoutUtils.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNASSIGNLAYOUTS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

bool isRowMajor(Type type) {
  TensorEncodingAttr encoding = getEncoding(type);
  return !encoding || encoding.isRowMajor();
}

RankedTensorType rowMajor(Type type) { return withDimOrder(type, {}); }

/// A per-channel bias cuDNN fuses after a K-channel convolution: a private,
/// non-splat constant of shape [1, K, 1, 1] or [K, 1, 1] (as
/// matchCudnnConv takes it; a splat is a literal in the step, not a
/// tensor cuDNN can read).
bool isFusableBias(Value bias, int64_t channels) {
  auto type = llvm::cast<RankedTensorType>(bias.getType());
  ArrayRef<int64_t> shape = type.getShape();
  bool perChannel = (shape == ArrayRef<int64_t>{1, channels, 1, 1}) ||
                    (shape == ArrayRef<int64_t>{channels, 1, 1});
  if (!perChannel || !isPrivateConstant(bias))
    return false;
  Operation *def = bias.getDefiningOp();
  ElementsAttr value = llvm::isa<WeightOp>(def) ? llvm::cast<WeightOp>(def).getValue()
                                                : llvm::cast<ConstantOp>(def).getValue();
  auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
  return dense && !dense.isSplat();
}

/// Tensor Core convolutions (f16/bf16, ungrouped, channels in whole
/// 16-byte groups, a filter of their own) run channels last: cuDNN's fast
/// Tensor Core engines, and its fused conv+bias+ReLU engines, take NHWC;
/// NCHW costs transposes inside cuDNN, or no fused engine at all.
bool prefersChannelsLast(Conv2dOp conv) {
  auto x = llvm::cast<RankedTensorType>(conv.getInput().getType());
  auto w = llvm::cast<RankedTensorType>(conv.getFilter().getType());
  Type element = x.getElementType();
  return (element.isF16() || element.isBF16()) && conv.getGroups() == 1 &&
         x.getDimSize(1) % 8 == 0 && w.getDimSize(0) % 8 == 0 && getEncoding(x).isRowMajor() &&
         isPrivateConstant(conv.getFilter());
}

/// Runs `conv` channels last: its input converted once for every such
/// convolution reading it (`converted`), or taken from the conversion back
/// that produced it; its filter laid out KRSC; and the epilogue cuDNN fuses
/// after it (at most one per-channel bias, none if the convolution has its
/// own; then ReLU) kept channels last. One conversion back follows; one
/// that only fed another such convolution's input is gone.
void runChannelsLast(Conv2dOp conv, OpBuilder &builder,
                     llvm::DenseMap<Value, Value> &converted) {
  Value x = conv.getInput();
  Value input;
  if (auto back = x.getDefiningOp<RelayoutOp>();
      back && back.getInput().getType() == channelsLast(x.getType())) {
    input = back.getInput();
  } else if (auto it = converted.find(x); it != converted.end()) {
    input = it->second;
  } else {
    builder.setInsertionPointAfterValue(x);
    input = builder.create<RelayoutOp>(conv.getLoc(), x,
                                       builder.getDenseI64ArrayAttr(kChannelsLast));
    converted[x] = input;
  }
  conv.getInputMutable().assign(input);
  if (auto back = x.getDefiningOp<RelayoutOp>(); back && back->use_empty())
    back.erase();
  conv.getFilter().setType(channelsLast(conv.getFilter().getType()));
  Value current = conv.getResult();
  current.setType(channelsLast(current.getType()));
  int64_t channels = llvm::cast<RankedTensorType>(current.getType()).getDimSize(1);
  bool biased = conv.getBias() != nullptr, relu = false;
  while (current.hasOneUse() && !relu) {
    Operation *user = *current.getUsers().begin();
    if (auto add = llvm::dyn_cast<AddOp>(user)) {
      Value bias = add.getLhs() == current ? add.getRhs() : add.getLhs();
      if (biased || !isFusableBias(bias, channels))
        break;
      // [1, K, 1, 1] is the same bytes in either layout; [K, 1, 1]
      // broadcasts from row-major.
      if (llvm::cast<RankedTensorType>(bias.getType()).getRank() == 4)
        bias.setType(channelsLast(bias.getType()));
      biased = true;
    } else if (llvm::isa<ReluOp>(user)) {
      relu = true;
    } else {
      break;
    }
    current = user->getResult(0);
    current.setType(channelsLast(current.getType()));
  }
  builder.setInsertionPointAfterValue(current);
  auto back = builder.create<RelayoutOp>(conv.getLoc(), current, builder.getDenseI64ArrayAttr({}));
  current.replaceAllUsesExcept(back, back);
}

struct KilnAssignLayoutsPass
    : public ::mlir::kiln::impl::KilnAssignLayoutsBase<KilnAssignLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Static shapes only so far: a function with symbolic sizes passes
    // through unchanged (docs/pass-pipeline.md).
    if (touchesSymbolicSizes(getOperation()))
      return;
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    OpBuilder builder(&getContext());

    // Model inputs: one conversion each, first in the body.
    builder.setInsertionPointToStart(&body);
    for (BlockArgument arg : body.getArguments()) {
      if (isRowMajor(arg.getType()))
        continue;
      auto converted = builder.create<RelayoutOp>(arg.getLoc(), arg, builder.getDenseI64ArrayAttr({}));
      arg.replaceAllUsesExcept(converted, converted);
    }

    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (llvm::isa<func::ReturnOp>(op) || !llvm::isa_and_nonnull<KilnDialect>(op->getDialect()))
        continue;
      if (llvm::isa<ConstantOp, WeightOp>(op)) {
        // The data is logical: the executable lays it out by the type.
        Value value = op->getResult(0);
        if (!isRowMajor(value.getType()))
          value.setType(rowMajor(value.getType()));
        continue;
      }
      if (auto relayout = llvm::dyn_cast<RelayoutOp>(op)) {
        // The same logical tensor: readers take the (row-major) input,
        // unless this is one of the input conversions made above.
        if (llvm::isa<BlockArgument>(relayout.getInput()) &&
            !isRowMajor(relayout.getInput().getType()))
          continue;
        relayout.getResult().replaceAllUsesWith(relayout.getInput());
        relayout.erase();
        continue;
      }
      if (llvm::all_of(op->getResultTypes(), isRowMajor))
        continue;
      auto infer = llvm::dyn_cast<InferTypeOpInterface>(op);
      SmallVector<Type> types;
      if (!infer || failed(infer.inferReturnTypes(&getContext(), op->getLoc(), op->getOperands(),
                                                  op->getRawDictionaryAttrs(),
                                                  op->getPropertiesStorage(), op->getRegions(),
                                                  types))) {
        op->emitError("kiln-assign-layouts: cannot infer the op's row-major result type");
        return signalPassFailure();
      }
      for (auto [result, type] : llvm::zip(op->getResults(), types))
        result.setType(type);
    }

    // Tensor Core convolutions, channels last, in program order (so a
    // convolution feeding another hands it channels last directly).
    SmallVector<Conv2dOp> convs(body.getOps<Conv2dOp>());
    llvm::DenseMap<Value, Value> converted;
    for (Conv2dOp conv : convs)
      if (prefersChannelsLast(conv))
        runChannelsLast(conv, builder, converted);

    // Model results: converted back to the declared layouts.
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    builder.setInsertionPoint(ret);
    ArrayRef<Type> declared = func.getFunctionType().getResults();
    for (auto [k, operand] : llvm::enumerate(ret->getOpOperands())) {
      if (operand.get().getType() == declared[k])
        continue;
      // A value returned unchanged keeps its declared layout: no round trip.
      if (auto converted = operand.get().getDefiningOp<RelayoutOp>();
          converted && converted.getInput().getType() == declared[k]) {
        operand.set(converted.getInput());
        if (converted->use_empty())
          converted.erase();
        continue;
      }
      TensorEncodingAttr want = getEncoding(declared[k]);
      auto converted = builder.create<RelayoutOp>(ret.getLoc(), operand.get(),
                                                  builder.getDenseI64ArrayAttr(want.getDimOrder()));
      operand.set(converted);
    }
  }
};

} // namespace
