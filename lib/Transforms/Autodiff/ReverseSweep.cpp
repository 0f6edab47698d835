//===- ReverseSweep.cpp - adjoints of a value, from the rule table --------===//

#include "ReverseSweep.h"

#include "GradRules.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::isFloatTensor(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

namespace {

/// Whether the sweep differentiates `op`: it has an active operand, a
/// result that `reaches` says the output depends on, and a derivative (ops
/// listed without a rule carry none).
bool isDifferentiated(Operation &op, const llvm::DenseSet<Value> &active,
                      llvm::function_ref<bool(Value)> reaches) {
  if (llvm::isa<WeightOp, ConstantOp>(op) || llvm::none_of(op.getResults(), reaches) ||
      llvm::none_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
    return false;
  std::optional<GradRule> rule = findGradRule(op.getName().getStringRef());
  return !rule || *rule;
}

} // namespace

FailureOr<SmallVector<Value>> mlir::kiln::reverseSweep(Block &body, const SweepRequest &request,
                                                       Operation *errorAt) {
  auto before = llvm::make_range(body.begin(), Block::iterator(request.end));

  // Active values: those a source reaches through float values. (Ops
  // listed without a rule, zero almost everywhere, stop it.)
  llvm::DenseSet<Value> active;
  for (Value source : request.sources)
    if (isFloatTensor(source))
      active.insert(source);
  for (Operation &op : before) {
    std::optional<GradRule> rule = findGradRule(op.getName().getStringRef());
    if (rule && !*rule)
      continue;
    if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value result : op.getResults())
        if (isFloatTensor(result))
          active.insert(result);
  }

  // The ops the sweep will differentiate: active ones the output depends
  // on. Every one that cannot be is named before any is built.
  llvm::DenseSet<Value> needed = {request.output};
  SmallVector<std::pair<Operation *, std::string>> missing;
  for (Operation &op : llvm::reverse(before)) {
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
  if (!missing.empty()) {
    for (auto &[op, why] : missing)
      op->emitError("kiln-grad: cannot differentiate '")
          << op->getName() << "', which " << request.dependsOn << ": " << why;
    errorAt->emitError("kiln-grad: ")
        << missing.size() << " op" << (missing.size() == 1 ? "" : "s")
        << " without a derivative" << request.hint;
    return failure();
  }

  // The reverse sweep from the output.
  OpBuilder builder(request.end);
  bool failed = false;
  llvm::DenseMap<Value, Value> adjoint;
  {
    GradBuilder seed(builder, request.output.getLoc(), failed);
    adjoint[request.output] =
        seed.splat(llvm::cast<RankedTensorType>(request.output.getType()), 1.0);
  }
  for (Operation &op : llvm::reverse(before)) {
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
  // Zeros for a source the output does not depend on.
  SmallVector<Value> adjoints;
  for (Value source : request.sources) {
    Value g = adjoint.lookup(source);
    if (!g) {
      GradBuilder b(builder, source.getLoc(), failed);
      g = b.splat(llvm::cast<RankedTensorType>(source.getType()), 0.0);
    }
    adjoints.push_back(g);
  }
  if (failed)
    return failure();
  return adjoints;
}
