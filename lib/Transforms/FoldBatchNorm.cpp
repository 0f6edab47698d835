//===- FoldBatchNorm.cpp - batch norm folded into its convolution ---------===//
//
// Inference batch norm after a convolution is a per-output-channel affine
// map of its result, so it folds into the convolution's filter and bias:
//
//   bn(conv(x, W, b)) = conv(x, W * a, (b - mean) * a + beta),
//   a = scale / sqrt(variance + epsilon)   (per output channel)
//
// what TensorRT, ONNX Runtime and TVM do for inference. On the CPU the
// convolution's library call then leaves nothing between it and a ReLU or
// a residual add, which the call takes as post-ops.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNFOLDBATCHNORM
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The f32 values of a weight or literal, or none.
std::optional<std::vector<double>> literalValues(Value value) {
  Operation *def = value.getDefiningOp();
  ElementsAttr attr;
  if (auto weight = llvm::dyn_cast_or_null<WeightOp>(def))
    attr = weight.getValue();
  else if (auto constant = llvm::dyn_cast_or_null<ConstantOp>(def))
    attr = constant.getValue();
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.getElementType().isF32())
    return std::nullopt;
  std::vector<double> values;
  values.reserve(dense.getNumElements());
  for (float v : dense.getValues<float>())
    values.push_back(v);
  return values;
}

bool isRowMajorF32(Value value) {
  auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
  return type && type.getElementType().isF32() && isStaticButBatch(type) && getEncoding(type) &&
         getEncoding(type).isRowMajor();
}

/// A constant of `like`'s type holding `values` (rounded to f32).
Value makeConstant(OpBuilder &builder, Location loc, Value like, ArrayRef<double> values) {
  auto type = llvm::cast<RankedTensorType>(like.getType());
  SmallVector<float> floats(values.begin(), values.end());
  auto logical = RankedTensorType::get(type.getShape(), type.getElementType());
  return builder.create<ConstantOp>(loc, type, DenseElementsAttr::get(logical, ArrayRef<float>(floats)));
}

struct KilnFoldBatchNormPass
    : public ::mlir::kiln::impl::KilnFoldBatchNormBase<KilnFoldBatchNormPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<BatchNormOp> norms;
    getOperation().walk([&](BatchNormOp norm) { norms.push_back(norm); });
    for (BatchNormOp norm : norms)
      fold(norm);
  }

  /// Folds `norm` into the convolution it normalises, when that convolution
  /// is an f32 one it alone reads, with constant filter, bias and
  /// normalisation parameters; else leaves both.
  void fold(BatchNormOp norm) {
    auto conv = norm.getInput().getDefiningOp<Conv2dOp>();
    if (!conv || !conv->hasOneUse() || !isRowMajorF32(conv.getResult()) ||
        !isRowMajorF32(conv.getFilter()) || !isRowMajorF32(norm.getResult()) ||
        !conv.getFilter().hasOneUse())
      return;
    auto filter = literalValues(conv.getFilter());
    int64_t channels = llvm::cast<RankedTensorType>(conv.getType()).getDimSize(1);
    std::optional<std::vector<double>> bias =
        conv.getBias() ? literalValues(conv.getBias()) : std::vector<double>(channels, 0.0);
    auto scale = literalValues(norm.getScale()), shift = literalValues(norm.getBias());
    auto mean = literalValues(norm.getMean()), variance = literalValues(norm.getVariance());
    if (!filter || !bias || !scale || !shift || !mean || !variance)
      return;
    for (const std::vector<double> *v : {&*bias, &*scale, &*shift, &*mean, &*variance})
      if (static_cast<int64_t>(v->size()) != channels)
        return;
    if (filter->size() % channels != 0)
      return;
    // Per output channel o: the filter's o-th block scaled, the bias moved.
    double epsilon = norm.getEpsilon().convertToDouble();
    int64_t block = static_cast<int64_t>(filter->size()) / channels;
    std::vector<double> newBias(channels);
    for (int64_t o = 0; o < channels; ++o) {
      double a = (*scale)[o] / std::sqrt((*variance)[o] + epsilon);
      for (int64_t k = 0; k < block; ++k)
        (*filter)[o * block + k] *= a;
      newBias[o] = ((*bias)[o] - (*mean)[o]) * a + (*shift)[o];
    }
    OpBuilder builder(conv);
    Location loc = conv.getLoc();
    Value newFilter = makeConstant(builder, loc, conv.getFilter(), *filter);
    // The bias: [channels] f32 row-major, as a convolution's own.
    Value biasLike = conv.getBias();
    Value newBiasValue;
    if (biasLike && isRowMajorF32(biasLike)) {
      newBiasValue = makeConstant(builder, loc, biasLike, newBias);
    } else if (!biasLike) {
      auto filterType = llvm::cast<RankedTensorType>(conv.getFilter().getType());
      auto type = RankedTensorType::get({channels}, builder.getF32Type(), filterType.getEncoding());
      SmallVector<float> floats(newBias.begin(), newBias.end());
      newBiasValue = builder.create<ConstantOp>(
          loc, type,
          DenseElementsAttr::get(RankedTensorType::get({channels}, builder.getF32Type()),
                                 ArrayRef<float>(floats)));
    } else {
      return;
    }
    OperationState state(loc, Conv2dOp::getOperationName());
    state.addOperands({conv.getInput(), newFilter, newBiasValue});
    state.addAttributes(conv->getAttrs());
    state.addTypes(norm.getType());
    Operation *folded = builder.create(state);
    // Where the normalisation was, for reports and errors.
    folded->setLoc(FusedLoc::get(builder.getContext(), {loc, norm.getLoc()}));
    norm.getResult().replaceAllUsesWith(folded->getResult(0));
    Operation *oldFilter = conv.getFilter().getDefiningOp();
    Operation *oldBias = conv.getBias() ? conv.getBias().getDefiningOp() : nullptr;
    norm.erase();
    conv.erase();
    for (Operation *old : {oldFilter, oldBias})
      if (old && old->use_empty())
        old->erase();
  }
};

} // namespace
