//===- QuantizedWeights.cpp - keep weight-only quantised weights small ----===//
//
// PyTorch exports a weight-only quantised weight as Cast + Mul in front of
// its consumer: mul(cast(Wq), scale), Wq an integer weight. Folding it
// would store the weight in float, four times the bytes of int8 (an
// embedding table of 30522 x 384 grows from 11 to 45 MiB). An embedding
// gather needs a few rows of it, so those rows are gathered from Wq and
// dequantised; a large matmul weight stays int8 for the GEMM's tile loads
// to dequantise, where the target's matmul kernels can. Choosing by bytes:
// small weights fold (they cost nothing either way).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/ReferenceConversion.h"
#include "kiln/Transforms/Passes.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNQUANTIZEDWEIGHTS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

bool isLiteral(Value value) {
  return llvm::isa_and_nonnull<ConstantOp, WeightOp>(value.getDefiningOp());
}

int64_t bytesOf(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  auto dtype = toReferenceDType(tensor.getElementType());
  return dtype ? tensor.getNumElements() * ::kiln::ref::byteWidth(*dtype) : 0;
}

/// A weight-only dequantisation: mul(cast(Wq), scale) with Wq an integer
/// weight or constant and scale a float constant, in either operand order.
struct Dequantization {
  MulOp mul;
  CastOp cast;
  Value scale;
};

std::optional<Dequantization> matchDequantization(MulOp mul) {
  for (unsigned k = 0; k < 2; ++k) {
    auto cast = mul->getOperand(k).getDefiningOp<CastOp>();
    Value scale = mul->getOperand(1 - k);
    if (!cast || !isLiteral(cast.getInput()) || !isLiteral(scale))
      continue;
    auto from = llvm::cast<RankedTensorType>(cast.getInput().getType()).getElementType();
    auto to = llvm::cast<RankedTensorType>(cast.getType()).getElementType();
    if (!from.isInteger() || from.isInteger(1) || !llvm::isa<FloatType>(to))
      continue;
    // The scale broadcasts to the weight; the product has the weight's shape.
    if (cast.getType().getShape() != mul.getType().getShape())
      continue;
    return Dequantization{mul, cast, scale};
  }
  return std::nullopt;
}

struct KilnQuantizedWeightsPass
    : public ::mlir::kiln::impl::KilnQuantizedWeightsBase<KilnQuantizedWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Dequantization> found;
    getOperation().walk([&](MulOp mul) {
      if (auto d = matchDequantization(mul))
        found.push_back(*d);
    });
    for (Dequantization &d : found) {
      Value dequantized = d.mul.getResult();
      int64_t quantizedBytes = bytesOf(d.cast.getInput().getType());
      int64_t foldedBytes = bytesOf(dequantized.getType());
      bool gathersOnly = !dequantized.use_empty() &&
                         llvm::all_of(dequantized.getUses(), [](OpOperand &use) {
                           return llvm::isa<GatherOp>(use.getOwner()) &&
                                  use.getOperandNumber() == 0;
                         });
      if (gathersOnly) {
        bool rewritten = true;
        for (Operation *user : llvm::make_early_inc_range(dequantized.getUsers()))
          rewritten &= rewriteGather(llvm::cast<GatherOp>(user), d);
        if (report && rewritten)
          d.mul->emitRemark("quantised embedding: gathers rows of the ")
              << quantizedBytes << "-byte integer table and dequantises them, instead of folding "
              << foldedBytes << " bytes of float table";
        else if (report)
          d.mul->emitRemark("quantised embedding: folded to ")
              << foldedBytes << " bytes of float table (" << quantizedBytes
              << " bytes quantised; its scale varies along the gathered rows)";
        continue;
      }
      // The right operand of matmuls the tiled kernel computes: a 2-D
      // weight, an f32, f16 or bf16 result.
      bool rhsOnly = !dequantized.use_empty() &&
                     llvm::all_of(dequantized.getUses(), [](OpOperand &use) {
                       auto matmul = llvm::dyn_cast<MatMulOp>(use.getOwner());
                       Type result = matmul ? matmul.getType().getElementType() : Type();
                       return matmul && use.getOperandNumber() == 1 &&
                              matmul.getRhs().getType().getRank() == 2 &&
                              (result.isF32() || result.isF16() || result.isBF16());
                     });
      if (rhsOnly && inGemm && foldedBytes >= minBytes && d.cast->hasOneUse() &&
          dequantized.hasOneUse()) {
        d.cast->setAttr(kDequantizeInGemmAttr, UnitAttr::get(&getContext()));
        if (report)
          d.mul->emitRemark("weight-only quantised matmul: keeps the ")
              << quantizedBytes << "-byte integer weight, dequantised in the GEMM's tile loads, "
              << "instead of folding " << foldedBytes << " bytes of float weight";
        continue;
      }
      if (report)
        d.mul->emitRemark("quantised weight: folded to ")
            << foldedBytes << " bytes of float weight (" << quantizedBytes << " bytes quantised; "
            << (!rhsOnly   ? "its users are not all gathers or right operands of 2-D float matmuls"
                : !inGemm ? "the target's matmuls do not dequantise in their loads"
                          : "below the size worth keeping quantised")
            << ")";
    }
  }

  /// gather(mul(cast(Wq), s), ids) -> mul(cast(gather(Wq, ids)), s'), where
  /// s' is s without its leading dimensions up to the gathered axis (which
  /// must all be 1: the scale does not vary along the rows gathered).
  bool rewriteGather(GatherOp gather, Dequantization d) {
    auto weightType = llvm::cast<RankedTensorType>(d.cast.getInput().getType());
    int64_t rank = weightType.getRank();
    int64_t axis = static_cast<int64_t>(gather.getAxis()); // (an I64Attr reads unsigned)
    if (axis < 0)
      axis += rank;
    auto scaleType = llvm::cast<RankedTensorType>(d.scale.getType());
    // Row-major throughout (what the frontends write), so the new ops' types
    // are what their inference gives and the reshaped scale keeps a valid
    // layout.
    for (Type t : std::initializer_list<Type>{weightType, scaleType, gather.getType(),
                                              gather.getIndices().getType()})
      if (!getEncoding(t) || !getEncoding(t).isRowMajor())
        return false;
    int64_t trailing = rank - axis - 1; // dimensions after the gathered axis
    ArrayRef<int64_t> scaleDims = scaleType.getShape();
    int64_t keep = std::min<int64_t>(scaleType.getRank(), trailing);
    for (int64_t k = 0; k + keep < scaleType.getRank(); ++k)
      if (scaleDims[k] != 1)
        return false;
    OpBuilder builder(gather);
    Location loc = gather.getLoc();
    Value scale = d.scale;
    if (keep != scaleType.getRank()) {
      ElementsAttr value = d.scale.getDefiningOp<ConstantOp>()
                               ? d.scale.getDefiningOp<ConstantOp>().getValue()
                               : d.scale.getDefiningOp<WeightOp>().getValue();
      auto literal = llvm::dyn_cast<DenseElementsAttr>(value);
      if (!literal) // (a resource-backed weight: left to the folder)
        return false;
      SmallVector<int64_t> dims(scaleDims.end() - keep, scaleDims.end());
      auto logical = RankedTensorType::get(dims, scaleType.getElementType());
      scale = builder.create<ConstantOp>(
          loc, RankedTensorType::get(dims, scaleType.getElementType(), scaleType.getEncoding()),
          literal.reshape(logical));
    }
    auto resultType = gather.getType();
    auto rowsType = RankedTensorType::get(resultType.getShape(), weightType.getElementType(),
                                          resultType.getEncoding());
    Value rows = builder.create<GatherOp>(loc, rowsType, d.cast.getInput(), gather.getIndices(),
                                          gather.getAxisAttr());
    Value converted = builder.create<CastOp>(loc, resultType, rows,
                                             TypeAttr::get(resultType.getElementType()));
    Value scaled = builder.create<MulOp>(loc, resultType, converted, scale);
    gather.getResult().replaceAllUsesWith(scaled);
    gather->erase();
    return true;
  }
};

} // namespace
