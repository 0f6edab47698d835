//===- Optimizer.cpp - a training step from a model's gradients -----------===//
//
// kiln-optimizer turns the function kiln-grad made (outputs: the loss, then
// grad.W per trainable weight) into one training step: each trainable
// weight W becomes a state input named W, its initial value the weight's
// (the `kiln.state` argument attribute), and the step returns the loss and
// W's updated value, which the runtime keeps for the next step
// (`kiln.state_output` names the result that updates each state input).
// Optimizer state (momentum's velocity, Adam's moments and step count) are
// states of the same kind, starting at zero.
//
//   sgd:      W' = W - lr * (g + wd * W)
//   momentum: v' = mu * v + (g + wd * W);  W' = W - lr * v'
//   adam:     t' = t + 1;  m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2
//             W' = W - lr * (m' / (1 - b1^t')) / (sqrt(v' / (1 - b2^t')) + eps)
//             (g with wd * W added: L2 regularisation, as torch.optim.Adam)
//
//===----------------------------------------------------------------------===//

#include "GradRules.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNOPTIMIZER
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnOptimizerPass : public ::mlir::kiln::impl::KilnOptimizerBase<KilnOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (optimizer != "sgd" && optimizer != "momentum" && optimizer != "adam") {
      func.emitError("kiln-optimizer: unknown optimizer '")
          << optimizer << "' (sgd, momentum or adam)";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    llvm::StringMap<WeightOp> weights;
    for (WeightOp w : body.getOps<WeightOp>())
      weights[w.getName()] = w;
    // The gradients kiln-grad returned, by weight: f32 ones (the update's
    // constants, epsilon above all, need f32), each once.
    SmallVector<std::pair<WeightOp, Value>> trained;
    for (unsigned i = 1; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "kiln.name");
      WeightOp w = name && name.getValue().starts_with("grad.")
                       ? weights.lookup(name.getValue().drop_front(5))
                       : WeightOp();
      if (!w) {
        func.emitError("kiln-optimizer: output #")
            << i << " is not a weight's gradient (run kiln-grad first)";
        return signalPassFailure();
      }
      if (llvm::any_of(trained, [&](auto &pair) { return pair.first == w; })) {
        func.emitError("kiln-optimizer: weight '") << w.getName() << "' has two gradients";
        return signalPassFailure();
      }
      if (!llvm::cast<RankedTensorType>(w.getType()).getElementType().isF32()) {
        w.emitError("kiln-optimizer: weight '")
            << w.getName() << "' is " << w.getType()
            << "; training steps update f32 weights so far (--trainable can leave it out)";
        return signalPassFailure();
      }
      trained.push_back({w, ret.getOperand(i)});
    }
    if (trained.empty()) {
      func.emitError("kiln-optimizer: no weight to train (--trainable matches none)");
      return signalPassFailure();
    }
    // The states' names: the weights', and the optimizer's beside them,
    // unused by any input or other state.
    llvm::StringSet<> names;
    for (BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "kiln.name"))
        names.insert(name.getValue());
    auto claim = [&](const std::string &name) {
      if (names.insert(name).second)
        return true;
      func.emitError("kiln-optimizer: the state '") << name << "' would share its name with "
                                                       "an input or another state";
      return false;
    };
    for (auto &[weight, grad] : trained) {
      std::string name = weight.getName().str();
      bool free = claim(name);
      if (optimizer == "momentum")
        free = free && claim(name + ".velocity");
      if (optimizer == "adam")
        free = free && claim(name + ".m") && claim(name + ".v");
      if (!free)
        return signalPassFailure();
    }
    if (optimizer == "adam" && !claim("adam.step"))
      return signalPassFailure();

    OpBuilder builder(ret);
    bool failed = false;
    SmallVector<Value> outputs = {ret.getOperand(0)};
    SmallVector<StringAttr> outputNames = {func.getResultAttrOfType<StringAttr>(0, "kiln.name")};
    // A state input named `name`, starting at `initial`.
    auto addState = [&](StringRef name, RankedTensorType type, ElementsAttr initial,
                        Location loc) -> BlockArgument {
      unsigned index = func.getNumArguments();
      SmallVector<NamedAttribute> attrs = {
          builder.getNamedAttr("kiln.name", builder.getStringAttr(name)),
          builder.getNamedAttr("kiln.state", initial)};
      (void)func.insertArgument(index, type, builder.getDictionaryAttr(attrs), loc);
      return func.getArgument(index);
    };
    // `state`'s next value: an output of its name, which the argument's
    // `kiln.state_output` names.
    auto update = [&](BlockArgument state, Value next) {
      func.setArgAttr(state.getArgNumber(), "kiln.state_output",
                      builder.getI64IntegerAttr(static_cast<int64_t>(outputs.size())));
      outputs.push_back(next);
      outputNames.push_back(func.getArgAttrOfType<StringAttr>(state.getArgNumber(), "kiln.name"));
    };
    auto zeros = [](RankedTensorType type) -> ElementsAttr {
      return DenseElementsAttr::get(RankedTensorType::get(type.getShape(), type.getElementType()),
                                    FloatAttr::get(type.getElementType(), 0.0));
    };

    // The weights become states first, so that a gradient that is a
    // weight's value itself reads the state.
    SmallVector<BlockArgument> states;
    for (auto [weight, grad] : trained) {
      states.push_back(addState(weight.getName(), llvm::cast<RankedTensorType>(weight.getType()),
                                weight.getValue(), weight.getLoc()));
      weight.getResult().replaceAllUsesWith(states.back());
    }
    auto gradientOf = [&](Value grad) -> Value {
      for (auto [k, pair] : llvm::enumerate(trained))
        if (grad == pair.first.getResult())
          return states[k];
      return grad;
    };

    // Adam's step count, shared: a float scalar on the weights' device.
    BlockArgument step;
    Value nextStep;
    if (optimizer == "adam") {
      GradBuilder b(builder, func.getLoc(), failed);
      TensorEncodingAttr e = getEncoding(trained.front().first.getType());
      auto type = RankedTensorType::get(
          {}, builder.getF32Type(),
          TensorEncodingAttr::get(&getContext(), {}, e.getDeviceKind(), e.getDeviceOrdinal()));
      step = addState("adam.step", type, zeros(type), func.getLoc());
      nextStep = b.build<AddOp>({step, b.scalar(step, 1)});
      update(step, nextStep);
    }
    for (auto [k, pair] : llvm::enumerate(trained)) {
      WeightOp weight = pair.first;
      GradBuilder b(builder, weight.getLoc(), failed);
      auto type = llvm::cast<RankedTensorType>(weight.getType());
      std::string name = weight.getName().str();
      BlockArgument w = states[k];
      Value g = gradientOf(pair.second);
      if (weightDecay != 0)
        g = b.build<AddOp>({g, b.build<MulOp>({w, b.scalar(w, weightDecay)})});
      Value lrValue = b.scalar(w, lr);
      if (optimizer == "sgd") {
        update(w, b.build<SubOp>({w, b.build<MulOp>({g, lrValue})}));
        continue;
      }
      if (optimizer == "momentum") {
        BlockArgument v = addState(name + ".velocity", type, zeros(type), weight.getLoc());
        Value nextV = b.build<AddOp>({b.build<MulOp>({v, b.scalar(v, momentum)}), g});
        update(w, b.build<SubOp>({w, b.build<MulOp>({nextV, lrValue})}));
        update(v, nextV);
        continue;
      }
      BlockArgument m = addState(name + ".m", type, zeros(type), weight.getLoc());
      BlockArgument v = addState(name + ".v", type, zeros(type), weight.getLoc());
      Value nextM = b.build<AddOp>({b.build<MulOp>({m, b.scalar(m, beta1)}),
                                    b.build<MulOp>({g, b.scalar(g, 1 - beta1)})});
      Value nextV =
          b.build<AddOp>({b.build<MulOp>({v, b.scalar(v, beta2)}),
                          b.build<MulOp>({b.build<MulOp>({g, g}), b.scalar(g, 1 - beta2)})});
      // Bias corrections 1 - beta^t'.
      auto correction = [&](double beta) {
        Value power = b.build<PowOp>({b.scalar(nextStep, beta), nextStep});
        return b.build<SubOp>({b.scalar(nextStep, 1), power});
      };
      Value mHat = b.build<DivOp>({nextM, correction(beta1)});
      Value vHat = b.build<DivOp>({nextV, correction(beta2)});
      Value denominator = b.build<AddOp>({b.build<SqrtOp>(vHat), b.scalar(vHat, epsilon)});
      Value delta = b.build<MulOp>({b.build<DivOp>({mHat, denominator}), lrValue});
      update(w, b.build<SubOp>({w, delta}));
      update(m, nextM);
      update(v, nextV);
    }
    if (failed)
      return signalPassFailure();
    replaceOutputs(func, outputs, outputNames);
    for (auto &pair : trained)
      pair.first.erase();
  }
};

} // namespace
