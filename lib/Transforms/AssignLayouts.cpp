//===- AssignLayouts.cpp - row-major inside, declared layouts at the edge -===//

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

/// `type` with the identity (row-major) order, on the same device.
RankedTensorType rowMajor(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  TensorEncodingAttr e = getEncoding(tensor);
  return RankedTensorType::get(
      tensor.getShape(), tensor.getElementType(),
      TensorEncodingAttr::get(type.getContext(), {}, e.getDeviceKind(), e.getDeviceOrdinal()));
}

struct KilnAssignLayoutsPass
    : public ::mlir::kiln::impl::KilnAssignLayoutsBase<KilnAssignLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
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
