//===- Grad.cpp - reverse-mode autodiff of a model function ---------------===//
//
// kiln-grad appends the backward graph of a scalar output to the model
// function, as ordinary kiln ops, so that constant folding, DCE, CSE,
// fusion, placement and code generation treat it as any graph. The
// function then returns the loss and, for every trainable weight W (a float
// kiln.weight whose name the `trainable` pattern matches), its gradient,
// named "grad.W".
//
// Activity: a value is active when a trainable weight reaches it through
// float values; only active values get adjoints. The reverse sweep walks
// the ops backwards from the loss, asking each op's rule (GradRules.cpp)
// for its operands' adjoints and summing those of values used more than
// once. An active op without a rule is an error; every such op is named at
// once, at its model location.
//
//===----------------------------------------------------------------------===//

#include "GradRules.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
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

bool isFloatTensor(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

/// Whether the sweep differentiates `op`: it has an active operand, a
/// result that `reaches` says the loss depends on, and a derivative (ops
/// listed without a rule carry none).
bool isDifferentiated(Operation &op, const llvm::DenseSet<Value> &active,
                      llvm::function_ref<bool(Value)> reaches) {
  if (llvm::isa<WeightOp, ConstantOp>(op) || llvm::none_of(op.getResults(), reaches) ||
      llvm::none_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
    return false;
  std::optional<GradRule> rule = findGradRule(op.getName().getStringRef());
  return !rule || *rule;
}

struct KilnGradPass : public ::mlir::kiln::impl::KilnGradBase<KilnGradPass> {
  using Base::Base;

  /// One error per op that cannot be differentiated, at its model
  /// location, then one for the function: every such op is named at once.
  void reportMissing(func::FuncOp func,
                     ArrayRef<std::pair<Operation *, std::string>> missing) {
    for (auto &[op, why] : missing)
      op->emitError("kiln-grad: cannot differentiate '")
          << op->getName() << "', which the loss '" << this->loss
          << "' depends on through trainable weights: " << why;
    func.emitError("kiln-grad: ") << missing.size() << " op"
                                  << (missing.size() == 1 ? "" : "s")
                                  << " without a derivative; --trainable can leave out the "
                                     "weights behind them";
    signalPassFailure();
  }

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

    // Trainable weights, in order, and the values they reach.
    SmallVector<WeightOp> weights;
    llvm::DenseSet<Value> active;
    for (Operation &op : body.without_terminator()) {
      if (auto weight = llvm::dyn_cast<WeightOp>(op)) {
        if (isFloatTensor(weight) && pattern.match(weight.getName())) {
          weights.push_back(weight);
          active.insert(weight);
        }
        continue;
      }
      // (Ops listed without a rule, zero almost everywhere, stop it.)
      std::optional<GradRule> rule = findGradRule(op.getName().getStringRef());
      if (rule && !*rule)
        continue;
      if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
        for (Value result : op.getResults())
          if (isFloatTensor(result))
            active.insert(result);
    }
    for (WeightOp weight : weights)
      if (hasSymbolicSizes(weight.getType())) {
        weight.emitError("kiln-grad: weights of dynamic dimensions are not differentiated yet");
        return signalPassFailure();
      }

    // The ops the sweep will differentiate: active ones the loss depends
    // on. Every one that cannot be is named before any is built.
    llvm::DenseSet<Value> needed = {loss};
    SmallVector<std::pair<Operation *, std::string>> missing;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (!isDifferentiated(op, active, [&](Value v) { return needed.contains(v); }))
        continue;
      std::optional<GradRule> rule = findGradRule(op.getName().getStringRef());
      std::string why;
      if (op.getNumResults() != 1)
        why = "it has several results";
      else if (touchesSymbolicSizes(&op))
        why = "its sizes are dynamic, which kiln-grad does not take yet";
      else if (!rule)
        why = "it has no derivative rule";
      else
        why = whyNoDerivative(&op);
      if (!why.empty())
        missing.push_back({&op, why});
      // (Past an op that cannot be differentiated too: to name every one.)
      for (Value operand : op.getOperands())
        if (active.contains(operand))
          needed.insert(operand);
    }
    if (!missing.empty())
      return reportMissing(func, missing);

    // The reverse sweep from the loss.
    OpBuilder builder(ret);
    bool failed = false;
    llvm::DenseMap<Value, Value> adjoint;
    {
      GradBuilder seed(builder, loss.getLoc(), failed);
      adjoint[loss] = seed.splat(lossType, 1.0);
    }
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (!isDifferentiated(op, active, [&](Value v) { return adjoint.count(v) != 0; }))
        continue;
      // (Checked above: one result, and a rule that applies.)
      GradRule rule = *findGradRule(op.getName().getStringRef());
      GradBuilder b(builder, op.getLoc(), failed);
      Value g = adjoint.lookup(op.getResult(0));
      if (!g)
        continue; // a build failed, and said why at its op
      SmallVector<Value> grads = rule(b, &op, g);
      assert(grads.size() == op.getNumOperands() && "a rule gives one adjoint per operand");
      // Rules give no adjoint to what takes none (an index, a condition),
      // which is never active.
      for (auto [operand, grad] : llvm::zip(op.getOperands(), grads)) {
        if (!active.contains(operand) || !grad)
          continue;
        auto [it, inserted] = adjoint.try_emplace(operand, grad);
        if (!inserted)
          it->second = b.build<AddOp>({it->second, grad});
      }
    }
    if (failed)
      return signalPassFailure();

    // The outputs: the loss, then each weight's gradient (zeros for a
    // weight the loss does not depend on).
    SmallVector<Value> outputs = {loss};
    SmallVector<StringAttr> names = {builder.getStringAttr(this->loss)};
    for (WeightOp weight : weights) {
      Value g = adjoint.lookup(weight);
      if (!g) {
        GradBuilder b(builder, weight.getLoc(), failed);
        g = b.splat(llvm::cast<RankedTensorType>(weight.getType()), 0.0);
      }
      outputs.push_back(g);
      names.push_back(builder.getStringAttr("grad." + weight.getName()));
    }
    replaceOutputs(func, outputs, names);
  }
};

} // namespace
