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
          name && name.getValue() == this->loss)
        loss = ret.getOperand(i);
    if (!loss) {
      func.emitError("kiln-grad: the model has no output named '") << this->loss << "'";
      return signalPassFailure();
    }
    auto lossType = llvm::cast<RankedTensorType>(loss.getType());
    if (!isFloatTensor(loss) || lossType.getNumElements() != 1 || hasSymbolicSizes(lossType)) {
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
    // on. Every one without a rule is named before any is built.
    llvm::DenseSet<Value> needed = {loss};
    SmallVector<std::pair<Operation *, std::string>> missing;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (op.getNumResults() != 1 || !needed.contains(op.getResult(0)) ||
          llvm::isa<WeightOp, ConstantOp>(op) ||
          llvm::none_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
        continue;
      std::optional<GradRule> rule = findGradRule(op.getName().getStringRef());
      if (touchesSymbolicSizes(&op))
        missing.push_back({&op, "its sizes are dynamic, which kiln-grad does not take yet"});
      else if (!rule)
        missing.push_back({&op, "it has no derivative rule"});
      else if (!*rule)
        continue; // carries no gradient: nothing before it is needed through it
      // (Past an op that cannot be differentiated too: to name every one.)
      for (Value operand : op.getOperands())
        if (active.contains(operand))
          needed.insert(operand);
    }
    if (!missing.empty())
      return reportMissing(func, missing);

    // The reverse sweep from the loss.
    OpBuilder builder(ret);
    llvm::DenseMap<Value, Value> adjoint;
    auto accumulate = [&](Value v, Value g, Location loc) {
      auto [it, inserted] = adjoint.try_emplace(v, g);
      if (!inserted) {
        GradBuilder b(builder, loc);
        it->second = b.build<AddOp>({it->second, g});
      }
    };
    {
      GradBuilder seed(builder, loss.getLoc());
      adjoint[loss] = seed.splat(lossType, 1.0);
    }
    bool failedRule = false;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (op.getNumResults() != 1 || !adjoint.count(op.getResult(0)) ||
          llvm::isa<WeightOp, ConstantOp>(op))
        continue;
      if (llvm::none_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
        continue;
      // (Checked above: a rule exists.)
      GradRule rule = *findGradRule(op.getName().getStringRef());
      if (!rule) // carries no gradient
        continue;
      GradBuilder b(builder, op.getLoc());
      std::string why;
      std::optional<SmallVector<Value>> grads = rule(b, &op, adjoint[op.getResult(0)], why);
      if (!grads) {
        // Go on with zeros, to name every op that cannot be differentiated
        // (the function fails all the same).
        missing.push_back({&op, why});
        for (Value operand : op.getOperands())
          if (active.contains(operand) && !adjoint.count(operand))
            adjoint[operand] = b.splat(llvm::cast<RankedTensorType>(operand.getType()), 0);
        continue;
      }
      // Rules give no adjoint to what takes none (an index, a condition),
      // which is never active; an active operand without one is a build
      // that failed, and reported why at the op.
      for (auto [operand, g] : llvm::zip(op.getOperands(), *grads)) {
        if (!active.contains(operand))
          continue;
        if (!g)
          failedRule = true;
        else
          accumulate(operand, g, op.getLoc());
      }
    }
    if (!missing.empty())
      return reportMissing(func, missing);
    if (failedRule)
      return signalPassFailure();

    // The outputs: the loss, then each weight's gradient (zeros for a
    // weight the loss does not depend on).
    SmallVector<Value> outputs = {loss};
    SmallVector<Attribute> names = {builder.getStringAttr(this->loss)};
    for (WeightOp weight : weights) {
      Value g = adjoint.lookup(weight);
      if (!g) {
        GradBuilder b(builder, weight.getLoc());
        g = b.splat(llvm::cast<RankedTensorType>(weight.getType()), 0.0);
      }
      outputs.push_back(g);
      names.push_back(builder.getStringAttr("grad." + weight.getName()));
    }
    builder.create<func::ReturnOp>(ret.getLoc(), outputs);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : outputs)
      types.push_back(v.getType());
    func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(), types));
    SmallVector<DictionaryAttr> attrs;
    for (Attribute name : names)
      attrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr("kiln.name", name)));
    func.setAllResultAttrs(attrs);
  }
};

} // namespace
