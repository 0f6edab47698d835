//===- ShapeOps.cpp - ONNX shape and data-movement ops --------------------===//
//
// Static shapes make Shape, Size, ConstantOfShape and Range constants, and
// ops that take shapes as inputs (Reshape, Expand, Slice, Tile, Pad,
// Unsqueeze, ...) read them by folding their producers; over dynamic
// dimensions Reshape, Expand, ConstantOfShape and Slice read symbolic sizes
// (SymbolicSizeOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/SymbolicSizes.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

/// Axes from the attribute (older opsets) or from input #k (newer ones).
FailureOr<SmallVector<int64_t>> axesOf(NodeContext &c, size_t k, int64_t inputOpset) {
  if (c.opset < inputOpset) {
    auto axes = c.attrInts("axes");
    return axes ? SmallVector<int64_t>(axes->begin(), axes->end()) : SmallVector<int64_t>{};
  }
  if (!c.input(k))
    return SmallVector<int64_t>{};
  return c.constantInts(k);
}

/// Reshape to sizes read from input #1 over a dynamic input or target: 0
/// copies the input's size (unless allowzero), -1 is what is left.
LogicalResult reshapeSymbolic(NodeContext &c) {
  std::optional<SmallVector<AffineExpr>> target = c.sizeInts(1);
  if (!target)
    return c.unsupportedBecause("input #1 must be a constant or sizes computed from shapes");
  SmallVector<AffineExpr> in = getDimSizes(c.type(c.input(0)));
  MLIRContext *context = c.builder.getContext();
  bool allowZero = c.attrInt("allowzero", 0) != 0;
  int64_t inferred = -1;
  AffineExpr known = getAffineConstantExpr(1, context);
  for (size_t d = 0; d < target->size(); ++d) {
    auto k = llvm::dyn_cast<AffineConstantExpr>((*target)[d]);
    if (k && k.getValue() == 0 && !allowZero) {
      if (d >= in.size())
        return c.unsupportedBecause("0 in the shape copies a dimension the input lacks");
      (*target)[d] = in[d];
    } else if (k && k.getValue() == -1) {
      if (inferred != -1)
        return emitError(c.loc) << "reshape: at most one dimension may be -1";
      inferred = d;
      continue;
    } else if (k && k.getValue() < 0) {
      return emitError(c.loc) << "reshape: invalid dimension " << k.getValue();
    }
    known = known * (*target)[d];
  }
  if (inferred != -1) {
    std::optional<AffineExpr> q = exactQuotient(productOf(in, context), known);
    if (!q)
      return emitError(c.loc) << "reshape: cannot infer -1 for " << sizesString(in) << " into "
                              << sizesString(*target);
    (*target)[inferred] = *q;
  }
  return c.finish(c.reshapeTo(c.input(0), *target));
}

/// The ends that keep every element: each static dimension's size, and
/// INT64_MAX (its end, whatever its size) for a dynamic one.
SmallVector<int64_t> wholeEnds(RankedTensorType type) {
  SmallVector<int64_t> ends;
  for (int64_t d : type.getShape())
    ends.push_back(ShapedType::isDynamic(d) ? std::numeric_limits<int64_t>::max() : d);
  return ends;
}

/// Slice bounds on a dynamic dimension: a forward slice from a static
/// start, to its end or to a static end within its least size; false when
/// the bounds need its size (negative indices, a reverse step).
bool dynamicSliceBounds(NodeContext &c, AffineExpr size, int64_t &start, int64_t &end,
                        int64_t step) {
  std::optional<std::pair<int64_t, int64_t>> range = sizeRange(size, c.sizeSymbols);
  if (!range || step < 1 || start < 0)
    return false;
  if (end >= range->second) {
    end = std::numeric_limits<int64_t>::max();
    return start <= range->first;
  }
  return end >= start && end <= range->first;
}

/// Slice of data to ends computed from dynamic sizes (x[:, :seq]): each
/// symbolic end cuts a static dimension from a static start with step 1,
/// and must stay within it over the symbols' ranges.
LogicalResult sliceToSymbolicEnds(NodeContext &c) {
  RankedTensorType type = c.type(c.input(0));
  int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> starts = c.constantInts(1);
  std::optional<SmallVector<AffineExpr>> ends = c.sizeInts(2);
  if (failed(starts))
    return failure();
  if (!ends || ends->size() != starts->size())
    return c.unsupportedBecause("slice ends computed from sizes must match the starts");
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (c.input(3)) {
    FailureOr<SmallVector<int64_t>> a = c.constantInts(3);
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t k = 0; k < starts->size(); ++k)
      axes.push_back(k);
  }
  if (c.input(4)) {
    FailureOr<SmallVector<int64_t>> st = c.constantInts(4);
    if (failed(st))
      return failure();
    steps = *st;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return c.unsupportedBecause("starts, ends, axes and steps differ in length");
  MLIRContext *context = c.builder.getContext();
  // Dimensions not sliced keep everything: a dynamic one to its end.
  SmallVector<int64_t> fullStarts(rank, 0), fullEnds = wholeEnds(type), fullSteps(rank, 1);
  SmallVector<AffineExpr> endSizes;
  for (int64_t end : fullEnds)
    endSizes.push_back(getAffineConstantExpr(end, context));
  for (size_t k = 0; k < axes.size(); ++k) {
    FailureOr<int64_t> axis = c.axis(axes[k], rank);
    if (failed(axis))
      return failure();
    int64_t dim = type.getDimSize(*axis), start = (*starts)[k];
    AffineExpr end = (*ends)[k];
    if (auto constant = llvm::dyn_cast<AffineConstantExpr>(end)) {
      int64_t e = constant.getValue(), step = steps[k], s = start;
      if (type.isDynamicDim(*axis) || step == 0)
        return c.unsupportedBecause("slices a dynamic dimension together with symbolic ends");
      normalizeSliceBounds(dim, step, s, e);
      fullStarts[*axis] = s;
      fullEnds[*axis] = e;
      fullSteps[*axis] = step;
      endSizes[*axis] = getAffineConstantExpr(e, context);
      continue;
    }
    std::optional<std::pair<int64_t, int64_t>> range = sizeRange(end, c.sizeSymbols);
    if (type.isDynamicDim(*axis) || steps[k] != 1 || start < 0 || start > dim || !range)
      return c.unsupportedBecause("slices to a dynamic size other than a static dimension cut "
                                  "from a static start with step 1");
    if (range->first < start || range->second > dim)
      return emitError(c.loc) << "slice end " << sizeString(end) << " ranges over "
                              << range->first << ".." << range->second
                              << ", outside dimension " << *axis << " [" << start << ", "
                              << dim << "]";
    fullStarts[*axis] = start;
    fullEnds[*axis] = 0;
    endSizes[*axis] = end;
  }
  return c.finish(c.build<SliceOp>(
      c.input(0), {c.named("starts", c.ints(fullStarts)), c.named("ends", c.ints(fullEnds)),
                   c.named("steps", c.ints(fullSteps)),
                   c.named("end_sizes", AffineMapAttr::get(getSizesMap(endSizes, context)))}));
}

} // namespace

void registerShapeConverters(ConverterMap &m) {
  m["Constant"] = [](NodeContext &c) -> LogicalResult {
    MLIRContext *ctx = c.builder.getContext();
    if (const onnx::AttributeProto *a = c.attr("value")) {
      std::string error;
      FailureOr<DenseElementsAttr> v = tensorToAttr(ctx, a->t(), error);
      if (failed(v))
        return c.unsupportedBecause(error);
      return c.finish(c.constant(*v));
    }
    if (const onnx::AttributeProto *a = c.attr("value_float"))
      return c.finish(c.constant(DenseElementsAttr::get(
                           RankedTensorType::get({}, Float32Type::get(ctx)), a->f())));
    if (const onnx::AttributeProto *a = c.attr("value_floats")) {
      std::vector<float> v(a->floats().begin(), a->floats().end());
      return c.finish(c.constant(DenseElementsAttr::get(
                           RankedTensorType::get({static_cast<int64_t>(v.size())}, Float32Type::get(ctx)),
                           ArrayRef<float>(v))));
    }
    if (const onnx::AttributeProto *a = c.attr("value_int"))
      return c.finish(c.constantI64(a->i(), /*asVector=*/false));
    if (const onnx::AttributeProto *a = c.attr("value_ints"))
      return c.finish(c.constantI64(std::vector<int64_t>(a->ints().begin(), a->ints().end())));
    return c.unsupportedBecause("constant of this kind (sparse or string)");
  };
  m["Shape"] = [](NodeContext &c) -> LogicalResult {
    ArrayRef<int64_t> shape = c.type(c.input(0)).getShape();
    int64_t rank = shape.size();
    int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    return c.finish(c.constantI64(shape.slice(start, std::max<int64_t>(end - start, 0))));
  };
  m["Size"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(c.constantI64(c.type(c.input(0)).getNumElements(), /*asVector=*/false));
  };
  m["Reshape"] = [](NodeContext &c) -> LogicalResult {
    SmallVector<int64_t> shape;
    if (c.opset < 5) {
      auto attr = c.attrInts("shape");
      if (!attr)
        return c.unsupportedBecause("no shape");
      shape.assign(attr->begin(), attr->end());
    } else if (std::optional<SmallVector<AffineExpr>> values = c.runTimeInts(1)) {
      return reshapeAtRunTime(c, *values);
    } else if (c.isSymbolic(1) || hasSymbolicSizes(c.input(0).getType())) {
      return reshapeSymbolic(c);
    } else {
      FailureOr<SmallVector<int64_t>> s = c.constantInts(1);
      if (failed(s))
        return failure();
      shape = *s;
    }
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    bool allowZero = c.attrInt("allowzero", 0) != 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 0 && !allowZero) {
        if (d >= in.size())
          return c.unsupportedBecause("0 in the shape copies a dimension the input lacks");
        shape[d] = in[d];
      }
    return c.finish(c.build<ReshapeOp>(c.input(0), {c.named("shape", c.builder.getDenseI64ArrayAttr(shape))}));
  };
  m["Flatten"] = [](NodeContext &c) -> LogicalResult {
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    int64_t rank = in.size();
    int64_t axis = c.attrInt("axis", 1);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis > rank)
      return c.unsupportedBecause("axis out of range");
    if (hasSymbolicSizes(c.input(0).getType())) {
      SmallVector<AffineExpr> sizes = getDimSizes(c.type(c.input(0)));
      MLIRContext *context = c.builder.getContext();
      return c.finish(c.reshapeTo(
          c.input(0), {productOf(ArrayRef<AffineExpr>(sizes).take_front(axis), context),
                       productOf(ArrayRef<AffineExpr>(sizes).drop_front(axis), context)}));
    }
    int64_t outer = std::accumulate(in.begin(), in.begin() + axis, int64_t(1), std::multiplies<>());
    int64_t inner = std::accumulate(in.begin() + axis, in.end(), int64_t(1), std::multiplies<>());
    return c.finish(c.reshape(c.input(0), {outer, inner}));
  };
  m["Squeeze"] = [](NodeContext &c) -> LogicalResult {
    std::optional<SmallVector<AffineExpr>> values =
        c.opset >= 13 ? c.runTimeInts(1) : std::nullopt;
    if (values && !values->empty())
      return squeezeAtRunTime(c, *values);
    // No axes read at run time are no axes: every dimension of size 1.
    FailureOr<SmallVector<int64_t>> axes = values ? SmallVector<int64_t>{} : axesOf(c, 1, 13);
    if (failed(axes))
      return failure();
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    SmallVector<AffineExpr> inSizes = getDimSizes(c.type(c.input(0)));
    int64_t rank = in.size();
    SmallVector<bool> drop(rank, false);
    if (axes->empty()) {
      for (int64_t d = 0; d < rank; ++d)
        drop[d] = in[d] == 1;
    }
    for (int64_t a : *axes) {
      FailureOr<int64_t> n = c.axis(a, rank);
      if (failed(n))
        return failure();
      if (in[*n] != 1) {
        emitError(c.loc) << "cannot squeeze dimension " << *n << " of size " << in[*n];
        return failure();
      }
      drop[*n] = true;
    }
    SmallVector<AffineExpr> shape;
    for (int64_t d = 0; d < rank; ++d)
      if (!drop[d])
        shape.push_back(inSizes[d]);
    return c.finish(c.reshapeTo(c.input(0), shape));
  };
  m["Unsqueeze"] = [](NodeContext &c) -> LogicalResult {
    if (c.opset >= 13)
      if (std::optional<SmallVector<AffineExpr>> values = c.runTimeInts(1);
          values && !values->empty())
        return unsqueezeAtRunTime(c, *values);
    FailureOr<SmallVector<int64_t>> axes = axesOf(c, 1, 13);
    if (failed(axes))
      return failure();
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    int64_t rank = in.size() + axes->size();
    SmallVector<bool> inserted(rank, false);
    for (int64_t a : *axes) {
      FailureOr<int64_t> n = c.axis(a, rank);
      if (failed(n))
        return failure();
      if (inserted[*n])
        return emitError(c.loc) << "axis " << a << " appears twice";
      inserted[*n] = true;
    }
    SmallVector<AffineExpr> inSizes = getDimSizes(c.type(c.input(0))), shape;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(inserted[d] ? getAffineConstantExpr(1, c.builder.getContext())
                                  : inSizes[next++]);
    return c.finish(c.reshapeTo(c.input(0), shape));
  };
  m["Transpose"] = [](NodeContext &c) -> LogicalResult {
    int64_t rank = c.rank(c.input(0));
    SmallVector<int64_t> perm;
    if (auto p = c.attrInts("perm"))
      perm.assign(p->begin(), p->end());
    else
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    return c.finish(c.build<TransposeOp>(c.input(0), {c.named("perm", c.builder.getDenseI64ArrayAttr(perm))}));
  };
  m["Concat"] = [](NodeContext &c) -> LogicalResult {
    SmallVector<Value> inputs;
    for (Value v : c.inputs)
      if (v)
        inputs.push_back(v);
    if (inputs.empty())
      return c.unsupportedBecause("no inputs");
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", 0), c.rank(inputs[0]));
    if (failed(axis))
      return failure();
    return c.finish(c.build<ConcatOp>(inputs, {c.named("axis", c.builder.getI64IntegerAttr(*axis))}));
  };
  m["Gather"] = [](NodeContext &c) -> LogicalResult {
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", 0), c.rank(c.input(0)));
    if (failed(axis))
      return failure();
    return c.finish(c.build<GatherOp>({c.input(0), c.input(1)},
                                       {c.named("axis", c.builder.getI64IntegerAttr(*axis))}));
  };
  m["GatherElements"] = [](NodeContext &c) -> LogicalResult {
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", 0), c.rank(c.input(0)));
    if (failed(axis))
      return failure();
    return c.finish(c.build<GatherElementsOp>({c.input(0), c.input(1)},
                                               {c.named("axis", c.builder.getI64IntegerAttr(*axis))}));
  };
  m["Slice"] = [](NodeContext &c) -> LogicalResult {
    if (c.opset >= 10 && c.isSymbolic(2))
      return sliceToSymbolicEnds(c);
    if (c.opset >= 10)
      for (size_t k = 1; k <= 4; ++k)
        if (c.readsAtRunTime(k))
          return sliceAtRunTime(c);
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    int64_t rank = in.size();
    SmallVector<int64_t> starts, ends, axes, steps;
    if (c.opset < 10) {
      auto s = c.attrInts("starts"), e = c.attrInts("ends"), a = c.attrInts("axes");
      if (!s || !e)
        return c.unsupportedBecause("no starts or ends");
      starts.assign(s->begin(), s->end());
      ends.assign(e->begin(), e->end());
      if (a)
        axes.assign(a->begin(), a->end());
    } else {
      FailureOr<SmallVector<int64_t>> s = c.constantInts(1), e = c.constantInts(2);
      if (failed(s) || failed(e))
        return failure();
      starts = *s;
      ends = *e;
      if (c.input(3)) {
        FailureOr<SmallVector<int64_t>> a = c.constantInts(3);
        if (failed(a))
          return failure();
        axes = *a;
      }
      if (c.input(4)) {
        FailureOr<SmallVector<int64_t>> st = c.constantInts(4);
        if (failed(st))
          return failure();
        steps = *st;
      }
    }
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k)
        axes.push_back(k);
    if (steps.empty())
      steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || ends.size() != starts.size() || steps.size() != starts.size())
      return c.unsupportedBecause("starts, ends, axes and steps differ in length");
    SmallVector<int64_t> fullStarts(rank, 0), fullEnds = wholeEnds(c.type(c.input(0))),
                         fullSteps(rank, 1);
    for (size_t k = 0; k < axes.size(); ++k) {
      FailureOr<int64_t> axis = c.axis(axes[k], rank);
      if (failed(axis))
        return failure();
      int64_t dim = in[*axis], step = steps[k], start = starts[k], end = ends[k];
      if (step == 0) {
        emitError(c.loc) << "slice step must not be 0";
        return failure();
      }
      if (ShapedType::isDynamic(dim)) {
        if (!dynamicSliceBounds(c, getDimSizes(c.type(c.input(0)))[*axis], start, end, step))
          return c.unsupportedBecause("slices dynamic dimension " + std::to_string(*axis) +
                                      " with bounds that need its size (negative, reverse, or "
                                      "past its least size)");
        fullStarts[*axis] = start;
        fullEnds[*axis] = end;
        fullSteps[*axis] = step;
        continue;
      }
      normalizeSliceBounds(dim, step, start, end);
      fullStarts[*axis] = start;
      fullEnds[*axis] = end;
      fullSteps[*axis] = step;
    }
    return c.finish(c.build<SliceOp>(c.input(0), {c.named("starts", c.builder.getDenseI64ArrayAttr(fullStarts)),
                                                   c.named("ends", c.builder.getDenseI64ArrayAttr(fullEnds)),
                                                   c.named("steps", c.builder.getDenseI64ArrayAttr(fullSteps))}));
  };
  m["Expand"] = [](NodeContext &c) -> LogicalResult {
    if (std::optional<SmallVector<AffineExpr>> values = c.runTimeInts(1))
      return expandAtRunTime(c, *values);
    if (c.isSymbolic(1) || hasSymbolicSizes(c.input(0).getType())) {
      std::optional<SmallVector<AffineExpr>> shape = c.sizeInts(1);
      if (!shape)
        return c.unsupportedBecause("input #1 must be a constant or sizes computed from shapes");
      auto target = broadcastSizes(getDimSizes(c.type(c.input(0))), *shape);
      if (!target)
        return emitError(c.loc) << "cannot expand " << sizesString(getDimSizes(c.type(c.input(0))))
                                << " to " << sizesString(*shape);
      return c.finish(c.broadcastTo(c.input(0), *target));
    }
    FailureOr<SmallVector<int64_t>> shape = c.constantInts(1);
    if (failed(shape))
      return failure();
    auto target = broadcastShapes(c.type(c.input(0)).getShape(), *shape);
    if (!target) {
      emitError(c.loc) << "cannot expand to the given shape";
      return failure();
    }
    return c.finish(c.build<BroadcastOp>(c.input(0), {c.named("shape", c.builder.getDenseI64ArrayAttr(*target))}));
  };
  m["Tile"] = [](NodeContext &c) -> LogicalResult {
    if (std::optional<SmallVector<AffineExpr>> values = c.runTimeInts(1))
      return tileAtRunTime(c, *values);
    FailureOr<SmallVector<int64_t>> repeats = c.constantInts(1);
    if (failed(repeats))
      return failure();
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    if (repeats->size() != in.size())
      return c.unsupportedBecause("repeats do not match the rank");
    // [d0, d1] tiled [r0, r1]: reshape to [1, d0, 1, d1], broadcast to
    // [r0, d0, r1, d1], reshape to [r0*d0, r1*d1].
    SmallVector<int64_t> spread, broadcast, result;
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t tiled;
      if ((*repeats)[d] < 0 || __builtin_mul_overflow((*repeats)[d], in[d], &tiled))
        return emitError(c.loc) << "cannot repeat dimension " << d << " (" << in[d] << ") "
                                << (*repeats)[d] << " times";
      spread.append({1, in[d]});
      broadcast.append({(*repeats)[d], in[d]});
      result.push_back(tiled);
    }
    Value v = c.reshape(c.input(0), spread);
    v = c.build<BroadcastOp>(v, {c.named("shape", c.builder.getDenseI64ArrayAttr(broadcast))});
    return c.finish(v ? c.reshape(v, result) : Value());
  };
  m["ConstantOfShape"] = [](NodeContext &c) -> LogicalResult {
    std::optional<SmallVector<AffineExpr>> sizes;
    if (c.isSymbolic(0)) {
      sizes = c.sizeInts(0);
    } else if (std::optional<SmallVector<AffineExpr>> values = c.runTimeInts(0)) {
      sizes.emplace();
      for (auto [d, v] : llvm::enumerate(*values)) {
        AffineExpr size = sizeAtRunTime(c, v, c.node.output(0) + ".dim" + std::to_string(d), 0,
                                        kRunTimeValueBound);
        if (!size)
          return failure();
        sizes->push_back(size);
      }
    }
    FailureOr<SmallVector<int64_t>> shape =
        sizes ? FailureOr<SmallVector<int64_t>>(SmallVector<int64_t>{}) : c.constantInts(0);
    if (failed(shape))
      return failure();
    MLIRContext *ctx = c.builder.getContext();
    DenseElementsAttr element = DenseElementsAttr::get(RankedTensorType::get({1}, Float32Type::get(ctx)), 0.0f);
    if (const onnx::AttributeProto *a = c.attr("value")) {
      std::string error;
      FailureOr<DenseElementsAttr> v = tensorToAttr(ctx, a->t(), error);
      if (failed(v))
        return c.unsupportedBecause(error);
      if (v->getNumElements() != 1)
        return emitError(c.loc) << "takes a 'value' of one element, got " << v->getNumElements();
      element = *v;
    }
    if (sizes) {
      // The value broadcast to the symbolic sizes at run time.
      auto scalar = RankedTensorType::get({}, element.getElementType());
      Value value = c.constant(DenseElementsAttr::get(scalar, element.getValues<Attribute>()[0]));
      return c.finish(c.broadcastTo(value, *sizes));
    }
    for (int64_t d : *shape)
      if (d < 0) {
        emitError(c.loc) << "negative dimension in ConstantOfShape";
        return failure();
      }
    if (!withinElementLimit(*shape))
      return emitError(c.loc) << "would make a tensor of more than 2^40 elements";
    auto type = RankedTensorType::get(*shape, element.getElementType());
    return c.finish(c.constant(DenseElementsAttr::get(type, element.getValues<Attribute>()[0])));
  };
  m["Range"] = [](NodeContext &c) -> LogicalResult {
    // Bounds read at run time: integer inputs, or casts of them.
    for (size_t k = 0; k < 3; ++k) {
      auto castOp = c.input(k).getDefiningOp<CastOp>();
      if (c.readsAtRunTime(k) || (castOp && c.runTimeElements(castOp.getInput())))
        return rangeAtRunTime(c);
    }
    FailureOr<double> start = c.constantScalar(0), limit = c.constantScalar(1), delta = c.constantScalar(2);
    if (failed(start) || failed(limit) || failed(delta))
      return failure();
    if (*delta == 0) {
      emitError(c.loc) << "Range with delta 0";
      return failure();
    }
    // Checked as a double: NaN, infinities and 2^63 do not convert.
    double length = std::ceil((*limit - *start) / *delta);
    if (std::isnan(length) || length > double(kMaxComputedElements))
      return emitError(c.loc) << "a range of " << length
                              << " elements; the importer builds constants of at most 2^26";
    int64_t count = length > 0 ? static_cast<int64_t>(length) : 0;
    Type element = c.type(c.input(0)).getElementType();
    ::kiln::ref::Tensor t = ::kiln::ref::Tensor::zeros(*toReferenceDType(element), {count});
    for (int64_t k = 0; k < count; ++k)
      t.setDouble(k, *start + k * *delta);
    return c.finish(c.constant(toElementsAttr(t, RankedTensorType::get({count}, element))));
  };
  m["Split"] = [](NodeContext &c) -> LogicalResult {
    ArrayRef<int64_t> in = c.type(c.input(0)).getShape();
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", 0), in.size());
    if (failed(axis))
      return failure();
    SmallVector<int64_t> sizes;
    if (c.opset < 13) {
      if (auto s = c.attrInts("split"))
        sizes.assign(s->begin(), s->end());
    } else if (c.readsAtRunTime(1)) {
      // No sizes read at run time split equally, as no sizes given.
      if (c.type(c.input(1)).getNumElements() > 0)
        return splitAtRunTime(c, *axis);
    } else if (c.input(1)) {
      FailureOr<SmallVector<int64_t>> s = c.constantInts(1);
      if (failed(s))
        return failure();
      sizes = *s;
    }
    int64_t parts = c.node.output_size(), dim = in[*axis];
    if (ShapedType::isDynamic(dim))
      return c.unsupportedBecause("splits dynamic dimension " + std::to_string(*axis));
    if (sizes.empty()) {
      if (parts == 0)
        return c.unsupportedBecause("no outputs");
      int64_t each = (dim + parts - 1) / parts;
      for (int64_t k = 0; k < parts; ++k)
        sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
    }
    if (static_cast<int64_t>(sizes.size()) != parts)
      return emitError(c.loc) << "splits into " << sizes.size() << " parts for " << parts
                              << " outputs";
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size < 0 || size > dim - total) // checked before adding: no overflow
        return emitError(c.loc) << "split sizes must be non-negative and add up to " << dim;
      total += size;
    }
    if (total != dim)
      return emitError(c.loc) << "split sizes must be non-negative and add up to " << dim;
    int64_t offset = 0;
    for (int64_t size : sizes) {
      SmallVector<int64_t> starts(in.size(), 0), ends = wholeEnds(c.type(c.input(0))),
                           steps(in.size(), 1);
      starts[*axis] = offset;
      ends[*axis] = offset + size;
      offset += size;
      Value part = c.build<SliceOp>(c.input(0), {c.named("starts", c.builder.getDenseI64ArrayAttr(starts)),
                                                 c.named("ends", c.builder.getDenseI64ArrayAttr(ends)),
                                                 c.named("steps", c.builder.getDenseI64ArrayAttr(steps))});
      if (!part)
        return failure();
      c.results.push_back(part);
    }
    return success();
  };
  m["Pad"] = [](NodeContext &c) -> LogicalResult {
    std::string mode = c.attrString("mode", "constant");
    if (mode != "constant")
      return c.unsupportedBecause("pad mode '" + mode + "'");
    int64_t rank = c.rank(c.input(0));
    SmallVector<int64_t> pads;
    double value = 0;
    if (c.opset < 11) {
      auto p = c.attrInts(c.opset < 2 ? "paddings" : "pads");
      if (!p)
        return c.unsupportedBecause("no pads");
      pads.assign(p->begin(), p->end());
      value = c.attrFloat("value", 0.0f);
    } else {
      FailureOr<SmallVector<int64_t>> p = c.constantInts(1);
      if (failed(p))
        return failure();
      pads = *p;
      if (c.input(2)) {
        FailureOr<double> v = c.constantScalar(2);
        if (failed(v))
          return failure();
        value = *v;
      }
      if (c.input(3)) {
        FailureOr<SmallVector<int64_t>> axes = c.constantInts(3);
        if (failed(axes))
          return failure();
        if (pads.size() != 2 * axes->size())
          return emitError(c.loc) << "has " << pads.size() << " pads for " << axes->size()
                                  << " axes (2 per axis)";
        SmallVector<int64_t> full(2 * rank, 0);
        for (size_t k = 0; k < axes->size(); ++k) {
          FailureOr<int64_t> a = c.axis((*axes)[k], rank);
          if (failed(a))
            return failure();
          full[*a] = pads[k];
          full[*a + rank] = pads[k + axes->size()];
        }
        pads = full;
      }
    }
    if (static_cast<int64_t>(pads.size()) != 2 * rank)
      return c.unsupportedBecause("pads do not match the rank");
    for (int64_t p : pads)
      if (p < 0)
        return c.unsupportedBecause("negative pads");
    SmallVector<int64_t> low(pads.begin(), pads.begin() + rank), high(pads.begin() + rank, pads.end());
    return c.finish(c.build<PadOp>(c.input(0), {c.named("low", c.builder.getDenseI64ArrayAttr(low)),
                                                 c.named("high", c.builder.getDenseI64ArrayAttr(high)),
                                                 c.named("value", c.builder.getF64FloatAttr(value))}));
  };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
