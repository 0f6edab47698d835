//===- AttentionFusion.cpp - scaled dot-product attention as one region ---===//
//
// matmul(softmax(mask(scale(matmul(q, k)))), v) is the pattern a fused
// attention kernel (FlashAttention-style: no score matrix in memory)
// computes. The pass only recognizes it and wraps it in one region, with
// q, k, v and the mask as inputs, so lowering can give it one kernel.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "kiln/CodeGen/AttentionLimits.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/Transforms/Passes.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFUSEATTENTION
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::fusion;

namespace {

/// The op defining `value` if it is a fusion candidate whose result has no
/// other user, else null.
Operation *soleProducer(Value value) {
  Operation *def = value.getDefiningOp();
  return def && isFusionCandidate(def) && value.hasOneUse() ? def : nullptr;
}

/// A multiplication by a known splat (a splat constant, or an exporter's
/// one-element initializer, which stays an input of the region), or a
/// division by one: the 1/sqrt(d) scale. Returns the scaled operand, or null.
Value scaledOperand(Operation *op) {
  if (llvm::isa<MulOp>(op) && knownSplat(op->getOperand(0)))
    return op->getOperand(1);
  if (llvm::isa<MulOp, DivOp>(op) && knownSplat(op->getOperand(1)))
    return op->getOperand(0);
  return nullptr;
}

/// True when `value` is the scores: a matmul, possibly scaled.
bool isScores(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (Value scaled = scaledOperand(def))
    def = scaled.getDefiningOp();
  return llvm::isa_and_nonnull<MatMulOp>(def);
}

struct KilnFuseAttentionPass : public ::mlir::kiln::impl::KilnFuseAttentionBase<KilnFuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    for (Operation &op : getOperation().getBody().front())
      if (auto softmax = llvm::dyn_cast<SoftmaxOp>(op); softmax && isFusionCandidate(softmax))
        softmaxes.push_back(softmax);
    for (SoftmaxOp softmax : softmaxes)
      match(softmax);
  }

  void match(SoftmaxOp softmax) {
    auto notFused = [&](const std::string &why) {
      remark(report, softmax, "attention fusion: not an attention pattern: " + why);
    };
    Group group;
    group.moved.insert(softmax);
    // Upwards: optional mask, optional scale, then the score matmul.
    Value chain = softmax.getInput();
    bool masked = false, isScaled = false;
    Operation *scores = nullptr;
    for (int step = 0; step < 3 && !scores; ++step) {
      Operation *def = soleProducer(chain);
      if (!def) {
        Operation *any = chain.getDefiningOp();
        return notFused(any && isFusionCandidate(any)
                            ? "the softmax input ('" + shortName(any) + "') has other users"
                            : "the softmax input is not computed by a matmul");
      }
      if (llvm::isa<MatMulOp>(def)) {
        scores = def;
      } else if (Value scaled = scaledOperand(def); scaled && !isScaled) {
        isScaled = true;
        chain = scaled;
      } else if (llvm::isa<AddOp>(def) && !masked && !isScaled) {
        masked = true; // scores + mask, either order
        chain = isScores(def->getOperand(0)) ? def->getOperand(0) : def->getOperand(1);
      } else if (llvm::isa<SelectOp>(def) && !masked && !isScaled) {
        // select(keep, scores, fill), or select(drop, fill, scores) as
        // PyTorch's masked_fill exports (Where(Equal(mask, 0), -inf, s)).
        masked = true;
        chain = isScores(def->getOperand(2)) ? def->getOperand(2) : def->getOperand(1);
      } else {
        return notFused("'" + shortName(def) + "' between the score matmul and the softmax is "
                        "neither a scale by a constant nor a mask");
      }
      group.moved.insert(def);
    }
    if (!scores)
      return notFused("no matmul computes the scores");
    auto type = llvm::cast<RankedTensorType>(softmax.getType());
    int64_t axis = softmax.getAxis();
    if (axis != -1 && axis != type.getRank() - 1)
      return notFused("the softmax is not over the last axis (the keys)");
    // Downwards: the probabilities times v.
    if (!softmax.getResult().hasOneUse())
      return notFused("the probabilities have other users");
    auto context = llvm::dyn_cast<MatMulOp>(*softmax.getResult().getUsers().begin());
    if (!context || !isFusionCandidate(context) || context.getLhs() != softmax.getResult() ||
        context.getTransposeA())
      return notFused("the probabilities do not feed a matmul with v");
    group.moved.insert(context);
    // On a GPU the region must have a kernel, or it would run on the host
    // (unfused, its matmuls and softmax have device code). Over symbolic
    // sizes the kernel takes the batch and the query and key counts as
    // arguments, but not the head dimensions, which size its tiles.
    auto encoding = getEncoding(softmax.getType());
    if (encoding && encoding.getDeviceKind() == DeviceKind::CUDA) {
      auto scoresMm = llvm::cast<MatMulOp>(scores);
      auto q = llvm::cast<RankedTensorType>(scoresMm.getLhs().getType());
      auto out = llvm::cast<RankedTensorType>(context.getType());
      int64_t depth = q.getDimSize(scoresMm.getTransposeA() ? q.getRank() - 2 : q.getRank() - 1);
      int64_t dv = out.getDimSize(out.getRank() - 1);
      if (ShapedType::isDynamic(depth) || ShapedType::isDynamic(dv))
        return notFused("its head dimensions are known only at run time, and the GPU's "
                        "attention kernel takes them as constants");
      if (!::kiln::codegen::attentionKernelFits(depth, dv, scoresMm.getTransposeA(),
                                                context.getTransposeB()))
        return notFused("head dimensions " + std::to_string(depth) + " and " +
                        std::to_string(dv) + " need more shared memory than the GPU's attention "
                        "kernel has");
    }
    Limits unbounded{1 << 20, 1 << 20, 1 << 20};
    std::string problem = checkLegality(group, unbounded);
    if (!problem.empty())
      return notFused(problem);
    FusionOp region = formRegion(group, FusionKind::Attention);
    remark(report, region,
           std::string("attention region") + (masked ? " with mask" : " without mask") + ": " +
               describeBody(region));
  }
};

} // namespace
