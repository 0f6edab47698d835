//===- Grad.cpp - reverse-mode autodiff of a model function ---------------===//
//
// kiln-grad appends the backward graph of a scalar output to the model
// function, as ordinary kiln ops, so that constant folding, DCE, CSE,
// fusion, placement and code generation treat it as any graph. The
// function then returns the loss and, for every trainable weight W (a float
// kiln.weight whose name the `trainable` pattern matches), its gradient,
// named "grad.W".
//
// The reverse sweep (ReverseSweep.cpp) does the work: activity from the
// weights, every op without a derivative named at once at its model
// location, then each op's rule (GradRules.cpp) backwards from the loss.
//
//===----------------------------------------------------------------------===//

#include "GradRules.h"
#include "ReverseSweep.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Transforms/Passes.h"

#include "llvm/Support/Regex.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNGRAD
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnGradPass : public ::mlir::kiln::impl::KilnGradBase<KilnGradPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    // The loss: the output named `loss`, a float scalar.
    Value loss;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto name = func.getResultAttrOfType<StringAttr>(i, "kiln.name");
          name && name.getValue() == this->loss) {
        if (loss) {
          func.emitError("kiln-grad: the model has two outputs named '") << this->loss << "'";
          return signalPassFailure();
        }
        loss = ret.getOperand(i);
      }
    if (!loss) {
      func.emitError("kiln-grad: the model has no output named '") << this->loss << "'";
      return signalPassFailure();
    }
    auto lossType = llvm::cast<RankedTensorType>(loss.getType());
    if (!isFloatTensor(loss) || !lossType.hasStaticShape() || lossType.getNumElements() != 1) {
      func.emitError("kiln-grad: the loss '")
          << this->loss << "' must be a float scalar, got " << loss.getType();
      return signalPassFailure();
    }
    llvm::Regex pattern(trainable);
    std::string regexError;
    if (!pattern.isValid(regexError)) {
      func.emitError("kiln-grad: trainable pattern '") << trainable << "': " << regexError;
      return signalPassFailure();
    }

    // Trainable weights, in order.
    SmallVector<WeightOp> weights;
    SmallVector<Value> sources;
    for (Operation &op : body.without_terminator())
      if (auto weight = llvm::dyn_cast<WeightOp>(op);
          weight && isFloatTensor(weight) && pattern.match(weight.getName())) {
        if (hasSymbolicSizes(weight.getType())) {
          weight.emitError("kiln-grad: weights of dynamic dimensions are not differentiated yet");
          return signalPassFailure();
        }
        weights.push_back(weight);
        sources.push_back(weight);
      }

    SweepRequest request{loss, sources, ret,
                         "the loss '" + this->loss + "' depends on through trainable weights",
                         "; --trainable can leave out the weights behind them"};
    FailureOr<SmallVector<Value>> adjoints = reverseSweep(body, request, func);
    if (failed(adjoints))
      return signalPassFailure();

    // The outputs: the loss, then each weight's gradient (zeros for a
    // weight the loss does not depend on).
    Builder builder(&getContext());
    SmallVector<Value> outputs = {loss};
    SmallVector<StringAttr> names = {builder.getStringAttr(this->loss)};
    for (auto [weight, g] : llvm::zip(weights, *adjoints)) {
      outputs.push_back(g);
      names.push_back(builder.getStringAttr("grad." + weight.getName()));
    }
    replaceOutputs(func, outputs, names);
  }
};

} // namespace
