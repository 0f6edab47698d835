//===- RunTimeSizeOps.cpp - shapes given as model inputs -------------------===//
//
// A shape, repeats, axes list, slice bounds, split sizes, pads or range
// bounds that arrive as a model input are read at run time. Each element is
// either a size symbol read from the input's data (NodeContext::runTimeInts:
// a Reshape's shape, Tile's repeats) or read directly inside the op's own
// size expressions (NodeContext::runTimeElements: Slice's bounds, Split's
// sizes), and each dimension it decides is a size symbol computed by the
// op's rule (a Reshape's 0 and -1, Expand's broadcasting, Slice's clamping)
// with the range a valid value has; checks that size nothing (distinct
// axes, sizes adding up) are symbols that must be 1. The result's type
// carries those symbols; the runtime evaluates them from the run's inputs
// and validates every op at the sizes they give before the run starts, so
// a value the op does not accept is refused by name.
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/SizeCode.h"

#include <cmath>

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
  /// The value when the code reads no symbol or input.
  std::optional<int64_t> value() const {
    int64_t v;
    if (!::kiln::ref::evaluateSizeCode(ops.data(), ops.size(), {}, nullptr, v).empty())
      return std::nullopt;
    return v;
  }
  /// `op` of the operands, simplified where a constant decides it (codes
  /// are pure: a dropped operand has no effect), so sizes that do not
  /// depend on the values read stay constants.
  static Code apply(SizeOp op, std::initializer_list<const Code *> operands) {
    SmallVector<std::optional<int64_t>> known;
    for (const Code *operand : operands)
      known.push_back(operand->value());
    auto is = [&](size_t k, int64_t v) { return known[k] && *known[k] == v; };
    const Code *const *args = operands.begin();
    if (op == SizeOp::Select && known[0])
      return *args[*known[0] != 0 ? 1 : 2];
    if ((op == SizeOp::Mul && (is(0, 0) || is(1, 0))))
      return constant(0);
    if ((op == SizeOp::Add && is(0, 0)) || (op == SizeOp::Mul && is(0, 1)))
      return *args[1];
    if ((op == SizeOp::Add && is(1, 0)) || (op == SizeOp::Mul && is(1, 1)))
      return *args[0];
    Code c;
    for (const Code *operand : operands)
      c.ops.append(operand->ops);
    c.ops.push_back(static_cast<int64_t>(op));
    if (std::optional<int64_t> v = c.value())
      return constant(*v);
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
Code ceilDiv(const Code &a, const Code &b) { return Code::apply(SizeOp::CeilDiv, {&a, &b}); }
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
RunTimeAxes axesAtRunTime(ArrayRef<Code> axes, int64_t rank) {
  RunTimeAxes out;
  SmallVector<Code> normalized;
  for (const Code &v : axes)
    normalized.push_back(v + lt(v, Code::constant(0)) * Code::constant(rank));
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

RunTimeAxes axesAtRunTime(ArrayRef<AffineExpr> axes, int64_t rank) {
  SmallVector<Code> codes;
  for (AffineExpr a : axes)
    codes.push_back(Code::of(a));
  return axesAtRunTime(codes, rank);
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

/// `code` as a size: a constant, or a new symbol `name` in [min, max].
AffineExpr sizeOf(NodeContext &c, const std::string &name, const Code &code, int64_t min,
                  int64_t max) {
  if (std::optional<int64_t> value = code.value())
    return getAffineConstantExpr(*value, c.builder.getContext());
  return c.computedSize(name, code.ops, min, max);
}

/// Input #k's integers as codes: each element read at run time (no
/// symbol, no range: the converter's own sizes and checks bound it), or
/// constant.
FailureOr<SmallVector<Code>> intsOf(NodeContext &c, size_t k) {
  SmallVector<Code> codes;
  if (auto elements = c.runTimeElements(c.input(k))) {
    for (const SmallVector<int64_t> &element : *elements)
      codes.push_back(Code{element});
    return codes;
  }
  FailureOr<SmallVector<int64_t>> values = c.constantInts(k);
  if (failed(values))
    return failure();
  for (int64_t v : *values)
    codes.push_back(Code::constant(v));
  return codes;
}

Code clamp(const Code &v, int64_t low, int64_t high) {
  return max(min(v, Code::constant(high)), Code::constant(low));
}

/// `x` sliced by (start, end, step) per dimension computed at run time, as
/// ONNX gives them (negative from the end, past the ends clamped), into
/// the bounds kiln.slice takes; the result's sizes are their extents.
Value sliceByBounds(NodeContext &c, Value x, ArrayRef<Code> starts, ArrayRef<Code> ends,
                    ArrayRef<Code> steps, const std::string &name) {
  ArrayRef<int64_t> in = c.type(x).getShape();
  MLIRContext *context = c.builder.getContext();
  SmallVector<AffineExpr> bounds(3 * in.size()), sizes;
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t dim = in[d];
    std::string at = " of dimension " + std::to_string(d);
    if (dim == 0) { // nothing to take
      bounds[d] = bounds[in.size() + d] = getAffineConstantExpr(0, context);
      bounds[2 * in.size() + d] = getAffineConstantExpr(1, context);
      sizes.push_back(getAffineConstantExpr(0, context));
      continue;
    }
    // As normalizeSliceBounds: a stride past the dimension takes one
    // element; negative bounds count from the end; then clamped.
    Code step = max(min(steps[d], Code::constant(dim)), Code::constant(-dim));
    Code start = starts[d] + lt(starts[d], Code::constant(0)) * Code::constant(dim);
    Code end = ends[d] + lt(ends[d], Code::constant(0)) * Code::constant(dim);
    Code forward = lt(Code::constant(0), step);
    start = select(forward, clamp(start, 0, dim), clamp(start, 0, dim - 1));
    end = select(forward, clamp(end, 0, dim), clamp(end, -1, dim - 1));
    AffineExpr s = sizeOf(c, name + ": start" + at, start, 0, dim);
    AffineExpr e = s ? sizeOf(c, name + ": end" + at, end, -1, dim) : AffineExpr();
    AffineExpr st = e ? sizeOf(c, name + ": step" + at, step, -dim, dim) : AffineExpr();
    if (!st)
      return Value();
    // ceil(|end - start| / |step|) elements, from the bounds' symbols (not
    // their codes again; divisors kept positive: select computes both of
    // its operands).
    start = Code::of(s);
    end = Code::of(e);
    step = Code::of(st);
    forward = lt(Code::constant(0), step);
    Code one = Code::constant(1), zero = Code::constant(0);
    Code ahead = select(lt(start, end), floorDiv(end - start - one, max(step, one)) + one, zero);
    Code behind =
        select(lt(end, start), floorDiv(start - end - one, max(zero - step, one)) + one, zero);
    AffineExpr size = sizeOf(c, name + ".dim" + std::to_string(d), select(forward, ahead, behind),
                             0, dim);
    if (!size)
      return Value();
    bounds[d] = s;
    bounds[in.size() + d] = e;
    bounds[2 * in.size() + d] = st;
    sizes.push_back(size);
  }
  return c.build<SliceOp>(
      x, {c.named("starts", c.ints({})), c.named("ends", c.ints({})), c.named("steps", c.ints({})),
          c.named("run_time_bounds", AffineMapAttr::get(getSizesMap(bounds, context))),
          c.named("result_sizes", AffineMapAttr::get(getSizesMap(sizes, context)))});
}

} // namespace

LogicalResult sliceAtRunTime(NodeContext &c) {
  Value x = c.input(0);
  if (hasSymbolicSizes(x.getType()))
    return c.unsupportedBecause("slices a dynamic dimension by bounds read at run time");
  ArrayRef<int64_t> in = c.type(x).getShape();
  int64_t rank = in.size();
  FailureOr<SmallVector<Code>> starts = intsOf(c, 1), ends = intsOf(c, 2);
  if (failed(starts) || failed(ends))
    return failure();
  size_t n = starts->size();
  if (ends->size() != n)
    return emitError(c.loc) << "has " << n << " starts and " << ends->size() << " ends";
  SmallVector<Code> axes, steps(n, Code::constant(1));
  if (c.input(3)) {
    FailureOr<SmallVector<Code>> a = intsOf(c, 3);
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < n; ++i)
      axes.push_back(Code::constant(i));
  }
  if (c.input(4)) {
    FailureOr<SmallVector<Code>> st = intsOf(c, 4);
    if (failed(st))
      return failure();
    steps = *st;
  }
  if (axes.size() != n || steps.size() != n)
    return emitError(c.loc) << "starts, ends, axes and steps differ in length";
  std::string name = c.node.output(0);
  // Checks, not sizes: the axes distinct and in range, no step 0.
  RunTimeAxes a = axesAtRunTime(axes, rank);
  Code zeroSteps = Code::constant(0);
  for (const Code &step : steps)
    zeroSteps = zeroSteps + eq(step, Code::constant(0));
  std::optional<int64_t> axesValid = a.valid.value(), noZeroStep = zeroSteps.value();
  if (axesValid && *axesValid != 1)
    return emitError(c.loc) << "slice axes must be distinct and within rank " << rank;
  if (noZeroStep && *noZeroStep != 0)
    return emitError(c.loc) << "slice step must not be 0";
  if ((!axesValid && !c.computedSize(name + ": axes are distinct and within rank " +
                                         std::to_string(rank),
                                     a.valid.ops, 1, 1)) ||
      (!noZeroStep && !c.computedSize(name + ": steps of 0", zeroSteps.ops, 0, 0)))
    return failure();
  // Each dimension's bounds: those of the axis naming it, else all of it.
  SmallVector<Code> dimStarts, dimEnds, dimSteps;
  for (int64_t d = 0; d < rank; ++d) {
    Code start = Code::constant(0), end = Code::constant(0), step = Code::constant(0);
    Code named = Code::constant(0);
    for (size_t i = 0; i < n; ++i) {
      Code axis = axes[i] + lt(axes[i], Code::constant(0)) * Code::constant(rank);
      Code hit = eq(axis, Code::constant(d));
      start = start + hit * (*starts)[i];
      end = end + hit * (*ends)[i];
      step = step + hit * steps[i];
      named = named + hit;
    }
    dimStarts.push_back(select(named, start, Code::constant(0)));
    dimEnds.push_back(select(named, end, Code::constant(in[d])));
    dimSteps.push_back(select(named, step, Code::constant(1)));
  }
  return c.finish(sliceByBounds(c, x, dimStarts, dimEnds, dimSteps, name));
}

LogicalResult splitAtRunTime(NodeContext &c, int64_t axis) {
  Value x = c.input(0);
  if (hasSymbolicSizes(x.getType()))
    return c.unsupportedBecause("splits a dynamic tensor by sizes read at run time");
  ArrayRef<int64_t> in = c.type(x).getShape();
  FailureOr<SmallVector<Code>> parts = intsOf(c, 1);
  if (failed(parts))
    return failure();
  if (static_cast<int64_t>(parts->size()) != c.node.output_size())
    return emitError(c.loc) << "splits into " << parts->size() << " parts for "
                            << c.node.output_size() << " outputs";
  // Each part not negative, and all adding up to the dimension.
  Code total = Code::constant(0);
  SmallVector<Code> sizes;
  for (auto [k, part] : llvm::enumerate(*parts)) {
    AffineExpr size = c.computedSize(c.node.output(k) + ": size", part.ops, 0, in[axis]);
    if (!size)
      return failure();
    sizes.push_back(Code::of(size));
    total = total + sizes.back();
  }
  if (!c.computedSize(c.node.output(0) + ": '" + c.node.input(1) + "' adds up to " +
                          std::to_string(in[axis]),
                      eq(total, Code::constant(in[axis])).ops, 1, 1))
    return failure();
  Code offset = Code::constant(0);
  for (size_t k = 0; k < parts->size(); ++k) {
    SmallVector<Code> starts, ends, steps;
    for (size_t d = 0; d < in.size(); ++d) {
      bool cut = static_cast<int64_t>(d) == axis;
      starts.push_back(cut ? offset : Code::constant(0));
      ends.push_back(cut ? offset + sizes[k] : Code::constant(in[d]));
      steps.push_back(Code::constant(1));
    }
    offset = offset + sizes[k];
    if (failed(c.finish(sliceByBounds(c, x, starts, ends, steps, c.node.output(k)))))
      return failure();
  }
  return success();
}

Value iotaAtRunTime(NodeContext &c, AffineExpr length) {
  MLIRContext *context = c.builder.getContext();
  auto type = getKilnTensorType({length}, c.builder.getI64Type(), {}, getDefaultEncoding(context));
  return c.builder
      .create<IotaOp>(c.loc, type, AffineMapAttr::get(getSizesMap({length}, context)))
      .getResult();
}

/// Input #k of a Range as a code: an integer read at run time or constant;
/// for a float Range, an integer read at run time cast to float (PyTorch's
/// arange over a size) or an integral constant.
std::optional<Code> rangeBound(NodeContext &c, size_t k) {
  Value v = c.input(k);
  if (!llvm::isa<FloatType>(c.type(v).getElementType())) {
    FailureOr<SmallVector<Code>> codes = intsOf(c, k);
    if (failed(codes) || codes->size() != 1)
      return std::nullopt;
    return (*codes)[0];
  }
  if (auto castOp = v.getDefiningOp<CastOp>())
    if (auto elements = c.runTimeElements(castOp.getInput()); elements && elements->size() == 1)
      return Code{(*elements)[0]};
  std::string saved = c.unsupported;
  FailureOr<double> value = c.constantScalar(k);
  c.unsupported = saved;
  if (failed(value) || *value != std::floor(*value) || std::abs(*value) > kRunTimeValueBound)
    return std::nullopt;
  return Code::constant(static_cast<int64_t>(*value));
}

LogicalResult rangeAtRunTime(NodeContext &c) {
  Type element = c.type(c.input(0)).getElementType();
  if (!element.isSignlessInteger(64) && !element.isSignlessInteger(32) && !element.isF32() &&
      !element.isF64())
    return c.unsupportedBecause("a range of this type read at run time");
  std::optional<Code> start = rangeBound(c, 0), limit = rangeBound(c, 1), delta = rangeBound(c, 2);
  if (!start || !limit || !delta)
    return c.unsupportedBecause("a range read at run time takes integers, or floats that are "
                                "integers read at run time cast or integral constants");
  Code s = *start, l = *limit, d = *delta, one = Code::constant(1);
  // max(ceil((limit - start) / delta), 0), divisors kept positive.
  Code up = ceilDiv(l - s, max(d, one));
  Code down = ceilDiv(s - l, max(Code::constant(0) - d, one));
  Code length = max(select(lt(Code::constant(0), d), up, down), Code::constant(0));
  Code zeroDelta = eq(d, Code::constant(0));
  if (std::optional<int64_t> zero = zeroDelta.value(); zero && *zero)
    return emitError(c.loc) << "Range with delta 0";
  if (!zeroDelta.value() && !c.computedSize(c.node.output(0) + ": delta of 0", zeroDelta.ops, 0, 0))
    return failure();
  AffineExpr n = sizeOf(c, c.node.output(0) + ".dim0", length, 0, kRunTimeValueBound);
  if (!n)
    return failure();
  // start + k * delta: in i64 for integers (then their type), in the
  // type of floats.
  Type wide = llvm::isa<FloatType>(element) ? element : c.builder.getI64Type();
  auto scalar = [&](size_t k) { return c.cast(c.reshape(c.input(k), {}), wide); };
  Value steps = c.cast(iotaAtRunTime(c, n), wide);
  return c.finish(c.cast(c.build<AddOp>({scalar(0), c.build<MulOp>({steps, scalar(2)})}), element));
}

LogicalResult padAtRunTime(NodeContext &c, ArrayRef<AffineExpr> pads, const std::string &mode) {
  Value x = c.input(0);
  RankedTensorType type = c.type(x);
  if (hasSymbolicSizes(type))
    return c.unsupportedBecause("pads a dynamic tensor by pads read at run time");
  ArrayRef<int64_t> in = type.getShape();
  int64_t rank = in.size();
  SmallVector<int64_t> axes;
  if (c.input(3)) {
    FailureOr<SmallVector<int64_t>> given = c.constantInts(3);
    if (failed(given))
      return failure();
    for (int64_t a : *given) {
      FailureOr<int64_t> axis = c.axis(a, rank);
      if (failed(axis))
        return failure();
      if (llvm::is_contained(axes, *axis))
        return emitError(c.loc) << "pads axis " << a << " twice";
      axes.push_back(*axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size())
    return emitError(c.loc) << "has " << pads.size() << " pads for " << axes.size()
                            << " axes (2 per axis)";
  MLIRContext *context = c.builder.getContext();
  Type element = type.getElementType();
  Value value = c.input(2) && mode == "constant"
                    ? c.cast(c.reshape(c.input(2), {}), element)
                    : c.scalarLike(x, 0);
  // `v` along `axis` from `start` towards `end` by `step` (affine sizes),
  // all of every other dimension.
  auto cut = [&](Value v, int64_t axis, AffineExpr start, AffineExpr end, AffineExpr step,
                 AffineExpr size) {
    SmallVector<AffineExpr> sizes = getDimSizes(c.type(v)), bounds(3 * rank);
    for (int64_t d = 0; d < rank; ++d) {
      bounds[d] = d == axis ? start : getAffineConstantExpr(0, context);
      bounds[rank + d] = d == axis ? end : sizes[d];
      bounds[2 * rank + d] = d == axis ? step : getAffineConstantExpr(1, context);
    }
    sizes[axis] = size;
    return c.build<SliceOp>(
        v, {c.named("starts", c.ints({})), c.named("ends", c.ints({})), c.named("steps", c.ints({})),
            c.named("run_time_bounds", AffineMapAttr::get(getSizesMap(bounds, context))),
            c.named("result_sizes", AffineMapAttr::get(getSizesMap(sizes, context)))});
  };
  auto constant = [&](int64_t v) { return getAffineConstantExpr(v, context); };
  Value y = x;
  for (auto [i, padded] : llvm::enumerate(axes)) {
    const int64_t axis = padded; // (a lambda below captures it)
    int64_t n = in[axis];
    // Reflection mirrors within the dimension; the others repeat.
    int64_t most = mode == "reflect" ? std::max<int64_t>(n - 1, 0) : kRunTimeValueBound;
    if (mode == "edge" && n == 0)
      most = 0;
    std::string at = " of dimension " + std::to_string(axis);
    AffineExpr before = sizeAtRunTime(c, pads[i], c.node.output(0) + ": pad before" + at, 0, most);
    AffineExpr after = before ? sizeAtRunTime(c, pads[i + axes.size()],
                                              c.node.output(0) + ": pad after" + at, 0, most)
                              : AffineExpr();
    if (!after)
      return failure();
    if (most == 0 && mode != "constant")
      continue; // nothing to mirror or repeat: both pads are checked 0
    auto spread = [&](Value v, AffineExpr size) {
      SmallVector<AffineExpr> sizes = getDimSizes(c.type(y));
      sizes[axis] = size;
      return c.broadcastTo(v, sizes);
    };
    Value left, right;
    if (mode == "constant") {
      left = spread(value, before);
      right = spread(value, after);
    } else if (mode == "edge") {
      left = spread(cut(y, axis, constant(0), constant(std::min<int64_t>(n, 1)), constant(1),
                        constant(std::min<int64_t>(n, 1))),
                    before);
      right = spread(cut(y, axis, constant(std::max<int64_t>(n - 1, 0)), constant(n), constant(1),
                         constant(std::min<int64_t>(n, 1))),
                     after);
    } else { // reflect: positions before..1, then n-2 down to n-1-after
      left = cut(y, axis, before, constant(0), constant(-1), before);
      right = cut(y, axis, constant(n - 2), constant(n - 2) - after, constant(-1), after);
    }
    y = c.build<ConcatOp>({left, y, right}, {c.named("axis", c.builder.getI64IntegerAttr(axis))});
  }
  return c.finish(y);
}

LogicalResult checkAllWithin(NodeContext &c, const std::string &name, size_t k, int64_t lo,
                             int64_t hi) {
  FailureOr<SmallVector<Code>> values = intsOf(c, k);
  if (failed(values))
    return failure();
  // One check for them all: how many are within [lo, hi], which must be all.
  Code within = Code::constant(0);
  for (const Code &v : *values)
    within = within + (Code::constant(1) - lt(v, Code::constant(lo))) *
                          (Code::constant(1) - lt(Code::constant(hi), v));
  int64_t n = values->size();
  return success(static_cast<bool>(c.computedSize(name, within.ops, n, n)));
}

AffineExpr nonZerosAtRunTime(NodeContext &c, const std::string &name, Value v, size_t limit) {
  std::optional<SmallVector<SmallVector<int64_t>>> elements =
      c.runTimeElements(v, /*anyRank=*/true);
  if (!elements)
    return AffineExpr();
  size_t counted = std::min(limit, elements->size());
  Code count = Code::constant(0);
  for (size_t j = 0; j < counted; ++j)
    count = count + (Code::constant(1) - eq(Code{(*elements)[j]}, Code::constant(0)));
  return c.computedSize(name, count.ops, 0, counted);
}

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
  return c.finish(c.broadcastTo(x, target));
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
  Value v = c.broadcastTo(c.reshape(x, spread), broadcast);
  return c.finish(v ? c.reshapeTo(v, result) : Value());
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
