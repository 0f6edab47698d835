//===- OpClasses.cpp - families of kiln ops and their device code ---------===//
//
// The families are op traits (KilnTraits.td), declared with each op; what
// depends on an op's types and attributes is decided here.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/OpClasses.h"

#include "kiln/IR/SymbolicSizes.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/ReferenceConversion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <vector>

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Every element type the IR has (the reference's dtypes): floats, signed
/// and unsigned integers, bool. (Integers compute in 64 bits and wrap to
/// their width, as the reference does.)
bool hasKernelElementType(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && toReferenceDType(tensor.getElementType()).has_value();
}

/// f32, f16 or bf16: what tiled kernels, block reductions and the
/// libraries compute.
bool isTiledFloat(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return false;
  Type e = tensor.getElementType();
  return e.isF32() || e.isF16() || e.isBF16();
}

bool allTypes(Operation *op, bool (*predicate)(Type)) {
  return llvm::all_of(op->getOperandTypes(), predicate) &&
         llvm::all_of(op->getResultTypes(), predicate);
}

/// The axes `op` reduces or normalises over, sorted.
std::vector<int64_t> reducedAxes(Operation *op, int64_t rank) {
  std::vector<int64_t> axes;
  if (auto list = op->getAttrOfType<DenseI64ArrayAttr>("axes")) {
    axes.assign(list.asArrayRef().begin(), list.asArrayRef().end());
  } else if (llvm::isa<LayerNormOp>(op)) {
    int64_t first = static_cast<int64_t>(llvm::cast<LayerNormOp>(op).getAxis());
    for (int64_t d = first < 0 ? first + rank : first; d < rank; ++d)
      axes.push_back(d);
  } else if (auto axis = op->getAttrOfType<IntegerAttr>("axis")) {
    axes.push_back(axis.getInt());
  } else if (llvm::isa<GlobalAvgPoolOp>(op)) {
    for (int64_t d = 2; d < rank; ++d)
      axes.push_back(d);
  }
  for (int64_t &a : axes)
    if (a < 0)
      a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool trailing(const std::vector<int64_t> &axes, int64_t rank) {
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(k))
      return false;
  return !axes.empty();
}

} // namespace

bool mlir::kiln::isElementwiseOp(Operation *op) {
  return op->hasTrait<OpTrait::kiln::ElementwiseFamily>();
}

bool mlir::kiln::isRowReductionOp(Operation *op) {
  return op->hasTrait<OpTrait::kiln::RowReductionFamily>();
}

bool mlir::kiln::isWindowOp(Operation *op) {
  // Integer and f64 matmuls and convolutions too: a loop over the
  // contraction per output element (f32, f16 and bf16 ones are tiled
  // kernels or library calls).
  bool loopContraction =
      llvm::isa<MatMulOp, Conv2dOp>(op) && !isTiledFloat(op->getResult(0).getType());
  return loopContraction || op->hasTrait<OpTrait::kiln::WindowFamily>();
}

bool mlir::kiln::isPerElementOp(Operation *op) {
  return isElementwiseOp(op) || isWindowOp(op) ||
         op->hasTrait<OpTrait::kiln::DataMovementFamily>();
}


bool mlir::kiln::hasRowReductionKernel(Operation *op) {
  // f32, f16 and bf16 (the block reduction is in f32), non-empty rows.
  if (!isRowReductionOp(op) || !allTypes(op, isTiledFloat))
    return false;
  auto input = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t rank = input.getRank();
  // Non-empty: no static dimension is 0 (a symbolic one may be 0 only if
  // its range starts there; the CPU then leaves such a run to the host).
  bool empty = llvm::any_of(input.getShape(), [](int64_t d) { return d == 0; });
  return !empty && trailing(reducedAxes(op, rank), rank);
}

bool mlir::kiln::hasDeviceCodeOverSymbolicSizes(Operation *op) {
  // A float matmul goes to cuBLASLt or kiln's GEMM kernels, a float
  // convolution to cuDNN (kiln-select-impl); all take their sizes per run.
  if (llvm::isa<MatMulOp, Conv2dOp>(op))
    return !isWindowOp(op);
  // Pooling windows over a symbolic batch (the window's image is static).
  if (llvm::isa<MaxPool2dOp, AvgPool2dOp>(op))
    return allTypes(op, isStaticButBatch);
  // Float reductions over any axes, symbolic extents included (a loop per
  // output element; argmax and integers over a symbolic extent: no).
  if (llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(op))
    return llvm::isa<FloatType>(
        llvm::cast<RankedTensorType>(op->getOperand(0).getType()).getElementType());
  // Data movement whose index arithmetic needs only static extents: a
  // slice's starts and steps (its ends only size the result), a gather's
  // gathered axis, a concat's axis. (A pad takes no symbolic input.)
  auto staticDim = [](Value v, int64_t d) {
    return !llvm::cast<RankedTensorType>(v.getType()).isDynamicDim(d);
  };
  if (auto slice = llvm::dyn_cast<SliceOp>(op))
    return !slice->hasAttr("run_time_bounds");
  if (llvm::isa<GatherOp, GatherElementsOp>(op)) {
    Value data = op->getOperand(0);
    int64_t rank = llvm::cast<RankedTensorType>(data.getType()).getRank();
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    return staticDim(data, axis < 0 ? axis + rank : axis);
  }
  if (auto concat = llvm::dyn_cast<ConcatOp>(op)) {
    int64_t rank = llvm::cast<RankedTensorType>(concat.getType()).getRank();
    int64_t axis = concat.getAxis() < 0 ? concat.getAxis() + rank : concat.getAxis();
    return llvm::all_of(concat.getInputs(), [&](Value v) { return staticDim(v, axis); });
  }
  return isElementwiseOp(op) || hasRowReductionKernel(op) ||
         llvm::isa<BroadcastOp, ReshapeOp, TransposeOp, RelayoutOp>(op);
}

std::string mlir::kiln::whyNoDeviceCode(Operation *op) {
  if (!allTypes(op, hasKernelElementType))
    return "its element type has no generated kernel";
  // Sizes read from input values (and the ops the loader validates per
  // run: a checked reshape, axes or bounds read at run time) stay on the
  // host, where those values are read.
  // (A symbolic reshape target or broadcast shape, and a slice's end at a
  // symbolic size, are per signature but not read from values.)
  bool symbolicEnds = llvm::isa<SliceOp>(op) && !op->hasAttr("run_time_bounds");
  bool perRun = op->hasAttr("checked_at_run_time") ||
                (hasPerSignatureAttrs(op) && !llvm::isa<ReshapeOp, BroadcastOp>(op) &&
                 !symbolicEnds);
  SmallVector<SizeSymbol> symbols;
  if (auto func = op->getParentOfType<func::FuncOp>())
    symbols = getSizeSymbols(func);
  // Lengths that follow computed data: read between steps, on the host.
  SmallVector<SizeSymbol> lengths(symbols);
  for (SizeSymbol &s : lengths)
    if (!s.bound)
      s.code.clear();
  if (llvm::isa<TakePrefixOp>(op) || usesComputedSymbols(op, lengths))
    return "its sizes follow computed data (a length read when the model runs), which device "
           "code does not take so far";
  if (perRun || usesComputedSymbols(op, symbols))
    return "its sizes are read from input values at run time, which device code does not take "
           "so far";
  if (touchesSymbolicSizes(op) && !hasDeviceCodeOverSymbolicSizes(op))
    return "its sizes are known only at run time, and its device code takes them as constants "
           "so far";
  if (hasRowReductionKernel(op) || isPerElementOp(op))
    return "";
  if (llvm::isa<LayerNormOp>(op)) // (row reductions but layer_norm are windows too)
    return "only f32, f16 and bf16 layer_norm over non-empty rows has device code";
  if (llvm::isa<MatMulOp>(op)) // f32, f16, bf16: tiled kernels or cuBLASLt
    return "";
  if (llvm::isa<ArgSortOp>(op)) // a rank sort
    return "";
  if (auto conv = llvm::dyn_cast<Conv2dOp>(op)) {
    auto type = llvm::cast<RankedTensorType>(conv.getInput().getType());
    // f32: a generated kernel or cuDNN; f16/bf16: cuDNN (kiln-select-impl),
    // NCHW, or channels last as kiln-assign-layouts gives Tensor Core ones.
    bool narrow = type.getElementType().isF16() || type.getElementType().isBF16();
    bool channelsLast = getEncoding(type).getLayoutString() == "nhwc" &&
                        getEncoding(conv.getFilter().getType()).getLayoutString() == "nhwc";
    if (!(getEncoding(type).isRowMajor() || (narrow && channelsLast)))
      return "only NCHW and f16 and bf16 NHWC convolutions have device code";
    return "";
  }
  return "'" + op->getName().stripDialect().str() + "' has no generated kernel";
}

DenseElementsAttr mlir::kiln::knownSplat(Value value) {
  DenseElementsAttr dense;
  if (auto constant = value.getDefiningOp<ConstantOp>())
    dense = llvm::dyn_cast<DenseElementsAttr>(constant.getValue());
  else if (auto weight = value.getDefiningOp<WeightOp>())
    if (weight.getValue().getNumElements() == 1)
      dense = llvm::dyn_cast<DenseElementsAttr>(weight.getValue());
  return dense && dense.isSplat() ? dense : nullptr;
}
