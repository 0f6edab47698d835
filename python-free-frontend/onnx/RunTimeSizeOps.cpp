//===- RunTimeSizeOps.cpp - shapes given as model inputs -------------------===//
//
// A Reshape's shape, Expand's shape, ConstantOfShape's shape, Tile's
// repeats or TopK's k that arrives as a model input is read at run time:
// each of its elements is a size symbol read from the input's data
// (NodeContext::runTimeInts), and each dimension it decides is a size
// symbol computed from those by the op's rule (a Reshape's 0 and -1,
// Expand's broadcasting), with a range the run's values must satisfy. The
// result's type carries those symbols; the runtime evaluates them from the
// run's inputs and validates every op at the sizes they give before the
// run starts, so a value the op does not accept is refused by name.
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/SizeCode.h"

using namespace mlir;
using namespace mlir::kiln;
using ::kiln::ref::SizeOp;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

/// A size expression as postfix code (include/kiln/Reference/SizeCode.h).
struct Code {
  SmallVector<int64_t> ops;

  static Code of(AffineExpr size) {
    Code c;
    appendSizeCode(size, c.ops);
    return c;
  }
  static Code constant(int64_t value) {
    Code c;
    c.ops = {static_cast<int64_t>(SizeOp::Constant), value};
    return c;
  }
  static Code apply(SizeOp op, std::initializer_list<const Code *> operands) {
    Code c;
    for (const Code *operand : operands)
      c.ops.append(operand->ops);
    c.ops.push_back(static_cast<int64_t>(op));
    return c;
  }
};

Code operator+(const Code &a, const Code &b) { return Code::apply(SizeOp::Add, {&a, &b}); }
Code operator*(const Code &a, const Code &b) { return Code::apply(SizeOp::Mul, {&a, &b}); }
Code operator-(const Code &a, const Code &b) { return a + b * Code::constant(-1); }
Code eq(const Code &a, const Code &b) { return Code::apply(SizeOp::Eq, {&a, &b}); }
Code max(const Code &a, const Code &b) { return Code::apply(SizeOp::Max, {&a, &b}); }
Code min(const Code &a, const Code &b) { return Code::apply(SizeOp::Min, {&a, &b}); }
Code lt(const Code &a, const Code &b) { return Code::apply(SizeOp::Lt, {&a, &b}); }
Code floorDiv(const Code &a, const Code &b) { return Code::apply(SizeOp::FloorDiv, {&a, &b}); }
Code select(const Code &c, const Code &a, const Code &b) {
  return Code::apply(SizeOp::Select, {&c, &a, &b});
}

/// The largest value of `size` over the symbols' ranges, or the bound of a
/// value read at run time when it has none.
int64_t largest(NodeContext &c, AffineExpr size) {
  std::optional<std::pair<int64_t, int64_t>> range = sizeRange(size, c.sizeSymbols);
  return range ? std::min(range->second, kRunTimeValueBound) : kRunTimeValueBound;
}

/// A name for dimension `d` of the node's output #0 ("y.dim1").
std::string dimName(NodeContext &c, size_t d) {
  return c.node.output(0) + ".dim" + std::to_string(d);
}

/// For axes read at run time of a rank-`rank` result: whether each
/// dimension is one of them (1 or 0; an axis may be negative), and a check
/// that holds (1) when the axes are distinct and within the rank.
struct RunTimeAxes {
  SmallVector<Code> isAxis;
  Code valid;
};
RunTimeAxes axesAtRunTime(ArrayRef<AffineExpr> axes, int64_t rank) {
  RunTimeAxes out;
  SmallVector<Code> normalized;
  for (AffineExpr a : axes) {
    Code v = Code::of(a);
    normalized.push_back(v + lt(v, Code::constant(0)) * Code::constant(rank));
  }
  Code count = Code::constant(0);
  for (int64_t d = 0; d < rank; ++d) {
    Code hits = Code::constant(0);
    for (const Code &a : normalized)
      hits = hits + eq(a, Code::constant(d));
    out.isAxis.push_back(min(hits, Code::constant(1)));
    count = count + out.isAxis.back();
  }
  // Out-of-range axes hit no dimension and repeated ones one: fewer hits.
  out.valid = eq(count, Code::constant(static_cast<int64_t>(axes.size())));
  return out;
}

/// sizes[index] for an index computed at run time (0 outside).
Code pick(ArrayRef<AffineExpr> sizes, const Code &index) {
  Code picked = Code::constant(0);
  for (size_t m = 0; m < sizes.size(); ++m)
    picked = picked + eq(index, Code::constant(static_cast<int64_t>(m))) * Code::of(sizes[m]);
  return picked;
}

/// The largest of `sizes` over the symbols' ranges.
int64_t largestOf(NodeContext &c, ArrayRef<AffineExpr> sizes) {
  int64_t most = 1;
  for (AffineExpr size : sizes)
    most = std::max(most, largest(c, size));
  return most;
}

/// `v` reshaped to `target`, computed at run time (the element count is
/// validated per run).
Value reshapeChecked(NodeContext &c, Value v, ArrayRef<AffineExpr> target) {
  return c.build<ReshapeOp>(
      v, {c.named("shape", c.ints({})),
          c.named("sizes", AffineMapAttr::get(getSizesMap(target, c.builder.getContext()))),
          c.named("checked_at_run_time", c.builder.getUnitAttr())});
}
LogicalResult finishReshape(NodeContext &c, ArrayRef<AffineExpr> target) {
  return c.finish(reshapeChecked(c, c.input(0), target));
}

/// The sizes of `in` but for the dimensions `isAxis` marks, computed at
/// run time: result dimension j is the j-th that stays.
FailureOr<SmallVector<AffineExpr>> keptSizes(NodeContext &c, ArrayRef<AffineExpr> in,
                                             ArrayRef<Code> isAxis, size_t dropped) {
  SmallVector<AffineExpr> target;
  for (size_t j = 0; j + dropped < in.size(); ++j) {
    Code size = Code::constant(0), kept = Code::constant(0);
    for (size_t d = 0; d < in.size(); ++d) {
      Code stays = Code::constant(1) - isAxis[d];
      size = size + stays * eq(kept, Code::constant(static_cast<int64_t>(j))) * Code::of(in[d]);
      kept = kept + stays;
    }
    AffineExpr e = c.computedSize(dimName(c, j), size.ops, 0, largestOf(c, in));
    if (!e)
      return failure();
    target.push_back(e);
  }
  return target;
}

} // namespace

LogicalResult unsqueezeAtRunTime(NodeContext &c, ArrayRef<AffineExpr> axes) {
  SmallVector<AffineExpr> in = getDimSizes(c.type(c.input(0)));
  int64_t rank = in.size() + axes.size();
  RunTimeAxes a = axesAtRunTime(axes, rank);
  if (!c.computedSize(c.node.output(0) + ": '" + c.node.input(1) + "' are distinct axes of rank " +
                          std::to_string(rank),
                      a.valid.ops, 1, 1))
    return failure();
  // Dimension d is 1 where an axis is, else the input's next dimension.
  SmallVector<AffineExpr> target;
  Code inserted = Code::constant(0);
  for (int64_t d = 0; d < rank; ++d) {
    Code size = select(a.isAxis[d], Code::constant(1), pick(in, Code::constant(d) - inserted));
    AffineExpr e = c.computedSize(dimName(c, d), size.ops, 0, largestOf(c, in));
    if (!e)
      return failure();
    target.push_back(e);
    inserted = inserted + a.isAxis[d];
  }
  return finishReshape(c, target);
}

LogicalResult squeezeAtRunTime(NodeContext &c, ArrayRef<AffineExpr> axes) {
  SmallVector<AffineExpr> in = getDimSizes(c.type(c.input(0)));
  int64_t rank = in.size();
  if (axes.size() > in.size())
    return emitError(c.loc) << "squeezes " << axes.size() << " axes of rank " << rank;
  RunTimeAxes a = axesAtRunTime(axes, rank);
  // Every squeezed dimension must be 1.
  Code notOne = Code::constant(0);
  for (int64_t d = 0; d < rank; ++d)
    notOne = notOne + a.isAxis[d] * (Code::constant(1) - eq(Code::of(in[d]), Code::constant(1)));
  Code valid = a.valid * eq(notOne, Code::constant(0));
  if (!c.computedSize(c.node.output(0) + ": '" + c.node.input(1) +
                          "' are distinct axes of size 1 of rank " + std::to_string(rank),
                      valid.ops, 1, 1))
    return failure();
  FailureOr<SmallVector<AffineExpr>> target = keptSizes(c, in, a.isAxis, axes.size());
  return failed(target) ? failure() : finishReshape(c, *target);
}

Value reduceAtRunTime(NodeContext &c, Value x, ArrayRef<AffineExpr> axes, bool keepdims,
                      function_ref<Value(ArrayRef<NamedAttribute>)> build) {
  SmallVector<AffineExpr> in = getDimSizes(c.type(x));
  int64_t rank = in.size();
  MLIRContext *context = c.builder.getContext();
  RunTimeAxes a = axesAtRunTime(axes, rank);
  // The axes, normalised (repeated ones are refused with the reduction).
  SmallVector<AffineExpr> normalized;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    Code v = Code::of(axis);
    AffineExpr e = c.computedSize(c.node.output(0) + ": axis #" + std::to_string(i),
                                  (v + lt(v, Code::constant(0)) * Code::constant(rank)).ops, 0,
                                  rank - 1);
    if (!e)
      return Value();
    normalized.push_back(e);
  }
  // Reduced with keepdims: 1 where an axis is.
  SmallVector<AffineExpr> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    Code size = select(a.isAxis[d], Code::constant(1), Code::of(in[d]));
    AffineExpr e = c.computedSize(keepdims ? dimName(c, d)
                                           : c.node.output(0) + ".kept" + std::to_string(d),
                                  size.ops, 0, largestOf(c, in));
    if (!e)
      return Value();
    sizes.push_back(e);
  }
  Value reduced =
      build({c.named("axes", c.ints({})), c.named("keepdims", c.builder.getBoolAttr(true)),
             c.named("run_time_axes", AffineMapAttr::get(getSizesMap(normalized, context))),
             c.named("result_sizes", AffineMapAttr::get(getSizesMap(sizes, context)))});
  if (!reduced || keepdims)
    return reduced;
  FailureOr<SmallVector<AffineExpr>> kept = keptSizes(c, in, a.isAxis, axes.size());
  return failed(kept) ? Value() : reshapeChecked(c, reduced, *kept);
}

LogicalResult reshapeAtRunTime(NodeContext &c, ArrayRef<AffineExpr> shape) {
  Value x = c.input(0);
  SmallVector<AffineExpr> in = getDimSizes(c.type(x));
  MLIRContext *context = c.builder.getContext();
  bool allowZero = c.attrInt("allowzero", 0) != 0;
  AffineExpr elements = productOf(in, context);
  // w[d]: 0 copies the input's dimension d (unless allowzero; -2, refused
  // below, where the input has none); the product of all is negative when
  // one is -1, which is then the elements over the others.
  SmallVector<Code> w;
  Code product = Code::constant(1), minusOnes = Code::constant(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    Code v = Code::of(shape[d]);
    w.push_back(allowZero ? v
                          : select(eq(v, Code::constant(0)),
                                   d < in.size() ? Code::of(in[d]) : Code::constant(-2), v));
    product = product * w.back();
    minusOnes = minusOnes + eq(v, Code::constant(-1));
  }
  // A check, not a size: the count of -1s, refused above 1.
  if (!c.computedSize(c.node.output(0) + ": -1s in '" + c.node.input(1) + "'", minusOnes.ops, 0, 1))
    return failure();
  // The inferred size divides by the others' product (at least 1: select
  // computes both of its operands).
  Code negated = product * Code::constant(-1);
  Code inferred = floorDiv(Code::of(elements), max(negated, Code::constant(1)));
  SmallVector<AffineExpr> target;
  for (size_t d = 0; d < shape.size(); ++d) {
    Code size = select(eq(Code::of(shape[d]), Code::constant(-1)), inferred, w[d]);
    // At most the elements, unless there are none (then another size is 0).
    std::optional<std::pair<int64_t, int64_t>> range = sizeRange(elements, c.sizeSymbols);
    int64_t most = range && range->first > 0 ? largest(c, elements) : kRunTimeValueBound;
    AffineExpr e = c.computedSize(dimName(c, d), size.ops, 0, most);
    if (!e)
      return failure();
    target.push_back(e);
  }
  return finishReshape(c, target);
}

AffineExpr sizeAtRunTime(NodeContext &c, AffineExpr value, const std::string &name, int64_t min,
                         int64_t max) {
  return c.computedSize(name, Code::of(value).ops, min, max);
}

LogicalResult expandAtRunTime(NodeContext &c, ArrayRef<AffineExpr> shape) {
  Value x = c.input(0);
  RankedTensorType type = c.type(x);
  if (hasSymbolicSizes(type))
    return c.unsupportedBecause("expands a dynamic dimension to a shape read at run time");
  ArrayRef<int64_t> in = type.getShape();
  size_t rank = std::max(in.size(), shape.size());
  MLIRContext *context = c.builder.getContext();
  // Aligned at the last dimension: a 1 takes the shape's size; another
  // size stays, and the shape's entry must be 1 or that size.
  SmallVector<AffineExpr> target;
  bool symbolic = false;
  for (size_t d = 0; d < rank; ++d) {
    int64_t a = d + in.size() >= rank ? in[d + in.size() - rank] : 1;
    if (d + shape.size() < rank) {
      target.push_back(getAffineConstantExpr(a, context));
      continue;
    }
    size_t j = d + shape.size() - rank;
    Code v = Code::of(shape[j]);
    if (a == 1) {
      AffineExpr e = c.computedSize(dimName(c, d), v.ops, 0, kRunTimeValueBound);
      if (!e)
        return failure();
      target.push_back(e);
      symbolic = true;
      continue;
    }
    // A check, not a size: 1 when the entry broadcasts to `a`.
    Code fits = eq(v, Code::constant(1)) + eq(v, Code::constant(a));
    if (!c.computedSize(c.node.output(0) + ": '" + c.node.input(1) + "'[" + std::to_string(j) +
                            "] is 1 or " + std::to_string(a),
                        fits.ops, 1, 1))
      return failure();
    target.push_back(getAffineConstantExpr(a, context));
  }
  if (!symbolic) {
    SmallVector<int64_t> sizes;
    for (AffineExpr e : target)
      sizes.push_back(llvm::cast<AffineConstantExpr>(e).getValue());
    return c.finish(c.build<BroadcastOp>(x, {c.named("shape", c.ints(sizes))}));
  }
  return c.finish(c.build<BroadcastOp>(
      x, {c.named("shape", c.ints({})),
          c.named("sizes", AffineMapAttr::get(getSizesMap(target, context)))}));
}

LogicalResult tileAtRunTime(NodeContext &c, ArrayRef<AffineExpr> repeats) {
  Value x = c.input(0);
  RankedTensorType type = c.type(x);
  if (hasSymbolicSizes(type))
    return c.unsupportedBecause("tiles a dynamic dimension by repeats read at run time");
  ArrayRef<int64_t> in = type.getShape();
  if (repeats.size() != in.size())
    return c.unsupportedBecause("repeats do not match the rank");
  MLIRContext *context = c.builder.getContext();
  // [d0, d1] tiled [r0, r1]: reshape to [1, d0, 1, d1], broadcast to
  // [r0, d0, r1, d1], reshape to [r0*d0, r1*d1].
  SmallVector<int64_t> spread;
  SmallVector<AffineExpr> broadcast, result;
  for (size_t d = 0; d < in.size(); ++d) {
    AffineExpr r = sizeAtRunTime(c, repeats[d],
                                 c.node.output(0) + ": repeats of dimension " + std::to_string(d), 0,
                                 kRunTimeValueBound);
    if (!r)
      return failure();
    AffineExpr size = getAffineConstantExpr(in[d], context);
    spread.append({1, in[d]});
    broadcast.append({r, size});
    result.push_back(r * size);
  }
  Value v = c.build<BroadcastOp>(
      c.reshape(x, spread),
      {c.named("shape", c.ints({})),
       c.named("sizes", AffineMapAttr::get(getSizesMap(broadcast, context)))});
  return c.finish(v ? c.reshapeTo(v, result) : Value());
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
