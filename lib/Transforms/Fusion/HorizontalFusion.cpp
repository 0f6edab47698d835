//===- HorizontalFusion.cpp - sibling matmuls as one wider matmul ---------===//
//
// Matmuls that read the same activations with different weights (the Q, K
// and V projections of attention, the gate and up projections of a gated
// MLP) each read the activations from memory and each launch a kernel. With
// their weights (and biases) concatenated at compile time they are one
// matmul with a wider N, which fills the GPU better; one slice per sibling
// gives each consumer its columns (in a kernel: the epilogue stores each
// column range to its own buffer).
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/OpClasses.h"

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFUSESIBLINGS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::fusion;

namespace {

/// The literal of a weight or a constant.
ElementsAttr literalOf(Value value) {
  if (auto weight = value.getDefiningOp<WeightOp>())
    return weight.getValue();
  if (auto constant = value.getDefiningOp<ConstantOp>())
    return constant.getValue();
  return nullptr;
}

std::string literalName(Value value) {
  if (auto weight = value.getDefiningOp<WeightOp>())
    return weight.getName().str();
  return "const";
}

/// A weight whose literal is the concatenation of `parts` along `axis`.
FailureOr<Value> concatLiterals(OpBuilder &builder, Location loc, ArrayRef<Value> parts,
                                int64_t axis) {
  std::vector<::kiln::ref::Tensor> tensors;
  std::string name;
  int64_t extent = 0;
  for (Value part : parts) {
    FailureOr<::kiln::ref::Tensor> tensor = toReferenceTensor(literalOf(part));
    if (failed(tensor))
      return failure();
    tensors.push_back(std::move(*tensor));
    name += (name.empty() ? "" : "+") + literalName(part);
    extent += llvm::cast<RankedTensorType>(part.getType()).getDimSize(axis);
  }
  std::vector<const ::kiln::ref::Tensor *> operands;
  for (const auto &t : tensors)
    operands.push_back(&t);
  ::kiln::ref::OpAttrs attrs;
  attrs["axis"].kind = ::kiln::ref::OpAttr::Int;
  attrs["axis"].i = axis;
  std::optional<::kiln::ref::Tensor> joined = ::kiln::ref::evaluate("kiln.concat", attrs, operands);
  if (!joined)
    return failure();
  auto first = llvm::cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = extent;
  RankedTensorType type = withShape(first, shape);
  return builder
      .create<WeightOp>(loc, type, builder.getStringAttr(name),
                        toElementsAttr(*joined, type))
      .getResult();
}

struct KilnFuseSiblingsPass : public ::mlir::kiln::impl::KilnFuseSiblingsBase<KilnFuseSiblingsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Static shapes only so far: a function with symbolic sizes passes
    // through unchanged (docs/pass-pipeline.md).
    if (touchesSymbolicSizes(getOperation()))
      return;
    func::FuncOp func = getOperation();
    auto visit = [&](Value source) {
      SmallVector<MatMulOp> siblings = findSiblings(source);
      return siblings.size() < 2 ? success() : fuse(source, siblings);
    };
    for (Value arg : func.getArguments())
      if (failed(visit(arg)))
        return signalPassFailure();
    SmallVector<Operation *> producers;
    // Any value can feed siblings: op results (a transfer's too), regions'.
    for (Operation &op : func.getBody().front())
      if (op.getNumResults() > 0)
        producers.push_back(&op);
    for (Operation *op : producers) {
      if (erased.contains(op))
        continue;
      for (Value result : op->getResults())
        if (failed(visit(result)))
          return signalPassFailure();
    }
  }

  /// Sibling matmuls and bias adds erased so far (their addresses may be
  /// reused by new ops, which are never in the list of producers to visit).
  llvm::DenseSet<Operation *> erased;

  /// Matmuls reading `source` as their left operand with a 2-D literal of
  /// the first one's dtype and contraction size on the right.
  SmallVector<MatMulOp> findSiblings(Value source) {
    SmallVector<MatMulOp> siblings;
    // Use lists run newest first; keep program order (wq, wk, wv).
    SmallVector<Operation *> users(source.getUsers());
    llvm::sort(users, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    for (Operation *user : users) {
      auto mm = llvm::dyn_cast<MatMulOp>(user);
      // (An integer matmul is a per-element loop, not a tiled kernel.)
      if (!mm || !isFusionCandidate(mm) || mm.getLhs() != source ||
          llvm::is_contained(siblings, mm) || isWindowOp(mm))
        continue;
      auto rhs = llvm::cast<RankedTensorType>(mm.getRhs().getType());
      if (!literalOf(mm.getRhs()) || rhs.getRank() != 2 || mm.getTransposeB() ||
          !getEncoding(rhs).isRowMajor()) {
        remark(report, mm, "horizontal fusion: 'matmul' has no sibling group: its right "
                           "operand is not a 2-D row-major weight");
        continue;
      }
      // The same product again is a recomputation (kiln-remat puts it in
      // the backward pass, where its result is read): merged, it would
      // run in the forward pass and live across.
      if (MatMulOp same = findSameProduct(siblings, mm)) {
        remark(report, mm, "horizontal fusion: 'matmul' computes the matmul at " +
                               lineOf(same) + " again and is kept apart from it");
        continue;
      }
      if (!siblings.empty()) {
        MatMulOp first = siblings.front();
        auto firstRhs = llvm::cast<RankedTensorType>(first.getRhs().getType());
        if (firstRhs.getElementType() != rhs.getElementType() ||
            firstRhs.getDimSize(0) != rhs.getDimSize(0) ||
            first.getTransposeA() != mm.getTransposeA() ||
            getEncoding(firstRhs) != getEncoding(rhs)) {
          remark(report, mm, "horizontal fusion: 'matmul' reads the same input as the matmul "
                             "at " + lineOf(first) + " but its weight differs in dtype, "
                             "contraction size or placement");
          continue;
        }
      }
      siblings.push_back(mm);
    }
    return siblings;
  }

  static MatMulOp findSameProduct(ArrayRef<MatMulOp> siblings, MatMulOp mm) {
    for (MatMulOp sibling : siblings)
      if (sibling.getRhs() == mm.getRhs() && sibling.getTransposeA() == mm.getTransposeA())
        return sibling;
    return nullptr;
  }

  /// The bias add of a sibling: its only user, adding a [N] literal.
  static AddOp biasOf(MatMulOp mm) {
    if (!mm.getResult().hasOneUse())
      return nullptr;
    auto add = llvm::dyn_cast<AddOp>(*mm.getResult().getUsers().begin());
    if (!add || !isFusionCandidate(add))
      return nullptr;
    Value bias = add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
    auto type = llvm::cast<RankedTensorType>(bias.getType());
    auto rhs = llvm::cast<RankedTensorType>(mm.getRhs().getType());
    if (!literalOf(bias) || type.getRank() != 1 || type.getDimSize(0) != rhs.getDimSize(1) ||
        type.getElementType() != rhs.getElementType() || add.getType() != mm.getType())
      return nullptr;
    return add;
  }

  LogicalResult fuse(Value source, SmallVector<MatMulOp> siblings) {
    SmallVector<AddOp> biases;
    for (MatMulOp mm : siblings)
      if (AddOp add = biasOf(mm))
        biases.push_back(add);
    bool withBias = biases.size() == siblings.size();

    Operation *earliest = siblings.front();
    for (MatMulOp mm : siblings)
      if (mm->isBeforeInBlock(earliest))
        earliest = mm;
    OpBuilder builder(earliest);
    Location loc = siblings.front().getLoc();
    SmallVector<Value> weights, biasValues;
    for (MatMulOp mm : siblings)
      weights.push_back(mm.getRhs());
    for (auto [mm, add] : llvm::zip(siblings, biases))
      biasValues.push_back(add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs());
    FailureOr<Value> weight = concatLiterals(builder, loc, weights, /*axis=*/1);
    if (failed(weight))
      return siblings.front().emitError("horizontal fusion could not join the weights");

    Group group;
    Value wide = builder.create<MatMulOp>(loc, source, *weight,
                                          builder.getBoolAttr(siblings.front().getTransposeA()),
                                          builder.getBoolAttr(false));
    group.moved.insert(wide.getDefiningOp());
    if (withBias) {
      FailureOr<Value> bias = concatLiterals(builder, loc, biasValues, /*axis=*/0);
      if (failed(bias))
        return siblings.front().emitError("horizontal fusion could not join the biases");
      wide = builder.create<AddOp>(loc, wide, *bias);
      group.moved.insert(wide.getDefiningOp());
    }
    auto wideType = llvm::cast<RankedTensorType>(wide.getType());
    int64_t rank = wideType.getRank(), offset = 0;
    for (auto [k, mm] : llvm::enumerate(siblings)) {
      int64_t n = llvm::cast<RankedTensorType>(mm.getRhs().getType()).getDimSize(1);
      SmallVector<int64_t> starts(rank, 0), ends(wideType.getShape()), steps(rank, 1);
      starts[rank - 1] = offset;
      ends[rank - 1] = offset + n;
      offset += n;
      Value slice = builder.create<SliceOp>(mm.getLoc(), wide,
                                            builder.getDenseI64ArrayAttr(starts),
                                            builder.getDenseI64ArrayAttr(ends),
                                            builder.getDenseI64ArrayAttr(steps),
                                            /*end_sizes=*/nullptr,
                                            /*run_time_bounds=*/nullptr,
                                            /*result_sizes=*/nullptr);
      group.moved.insert(slice.getDefiningOp());
      Operation *replaced = withBias ? biases[k].getOperation() : mm.getOperation();
      replaced->getResult(0).replaceAllUsesWith(slice);
    }
    // Only now: the builder inserts before the earliest sibling.
    for (auto [k, mm] : llvm::enumerate(siblings)) {
      if (withBias) {
        erased.insert(biases[k]);
        biases[k].erase();
      }
      erased.insert(mm);
      mm.erase();
    }
    FusionOp region = formRegion(group, FusionKind::Horizontal);
    remark(report, loc,
           "horizontal region: " + std::to_string(siblings.size()) +
               " sibling matmuls reading one input become one matmul with N=" +
               std::to_string(offset) + (withBias ? " and its bias" : "") + ": " +
               describeBody(region));
    return success();
  }
};

} // namespace
