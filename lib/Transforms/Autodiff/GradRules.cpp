//===- GradRules.cpp - one derivative rule per kiln op --------------------===//
//
// Each rule gets the forward op and its result's adjoint `g` and returns the
// adjoint of every operand, in the operands' shapes (broadcast operands
// summed back). Rules read the forward values an op has (its result, its
// operands) rather than recomputing them; what an op does not keep (layer
// norm's mean and deviation) is recomputed from its operands.
//
//===----------------------------------------------------------------------===//

#include "GradRules.h"

#include "kiln/IR/KilnTypes.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::kiln;

static RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

Value GradBuilder::splat(RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute v = llvm::isa<FloatType>(element)
                    ? Attribute(builder.getFloatAttr(element, value))
                    : Attribute(builder.getIntegerAttr(element, static_cast<int64_t>(value)));
  auto literal = DenseElementsAttr::get(RankedTensorType::get(type.getShape(), element), v);
  // On the type's device, in its layout (a literal is logical either way).
  TensorEncodingAttr e = getEncoding(type);
  auto result = RankedTensorType::get(
      type.getShape(), element,
      TensorEncodingAttr::get(builder.getContext(), e.getDimOrder(), e.getDeviceKind(),
                              e.getDeviceOrdinal()));
  return builder.create<ConstantOp>(loc, result, literal);
}

Value GradBuilder::scalar(Value like, double value) {
  if (!like)
    return Value();
  return splat(RankedTensorType::get({}, typeOf(like).getElementType(), typeOf(like).getEncoding()),
               value);
}

Value GradBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  if (!v || typeOf(v).getShape() == shape)
    return v;
  return build<ReshapeOp>(v, {named("shape", builder.getDenseI64ArrayAttr(shape))});
}

Value GradBuilder::select(Value cond, Value a, Value b) { return build<SelectOp>({cond, a, b}); }

Value GradBuilder::slice(Value v, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                         ArrayRef<int64_t> steps) {
  return build<SliceOp>(v, {named("starts", builder.getDenseI64ArrayAttr(starts)),
                            named("ends", builder.getDenseI64ArrayAttr(ends)),
                            named("steps", builder.getDenseI64ArrayAttr(steps))});
}

Value GradBuilder::pad(Value v, ArrayRef<int64_t> low, ArrayRef<int64_t> high) {
  auto zero = [](int64_t p) { return p == 0; };
  if (llvm::all_of(low, zero) && llvm::all_of(high, zero))
    return v;
  return build<PadOp>(v, {named("low", builder.getDenseI64ArrayAttr(low)),
                          named("high", builder.getDenseI64ArrayAttr(high))});
}

Value GradBuilder::unbroadcast(Value g, RankedTensorType type) {
  if (!g)
    return g;
  ArrayRef<int64_t> from = typeOf(g).getShape(), to = type.getShape();
  size_t extra = from.size() - to.size();
  SmallVector<int64_t> summed;
  for (size_t d = 0; d < from.size(); ++d)
    if (d < extra || (to[d - extra] == 1 && from[d] != 1))
      summed.push_back(d);
  if (!summed.empty())
    g = build<ReduceSumOp>(g, {axes(summed)});
  return reshape(g, to);
}

Value GradBuilder::spread(Value g, RankedTensorType type, ArrayRef<int64_t> reduced) {
  SmallVector<int64_t> kept(type.getShape());
  for (int64_t a : reduced)
    kept[a] = 1;
  return build<BroadcastOp>(reshape(g, kept),
                            {named("shape", builder.getDenseI64ArrayAttr(type.getShape()))});
}

namespace {

using Grads = SmallVector<Value>;

Grads one(Value v) { return SmallVector<Value>{v}; }

/// Rules of unary ops from the input x, the result y and the adjoint g.
GradRule unary(std::function<Value(GradBuilder &, Value x, Value y, Value g)> rule) {
  return [rule](GradBuilder &b, Operation *op, Value g) -> Grads {
    return one(rule(b, op->getOperand(0), op->getResult(0), g));
  };
}

/// Rules of binary elementwise ops (NumPy broadcasting): the adjoint of
/// each operand at the result's shape, then summed back to its own.
GradRule binary(std::function<std::pair<Value, Value>(GradBuilder &, Value a, Value b, Value y,
                                                      Value g)>
                    rule) {
  return [rule](GradBuilder &b, Operation *op, Value g) -> Grads {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    auto [ga, gb] = rule(b, lhs, rhs, op->getResult(0), g);
    return SmallVector<Value>{b.unbroadcast(ga, typeOf(lhs)), b.unbroadcast(gb, typeOf(rhs))};
  };
}

/// A mask as the adjoint's element type: 1 where `cond`, else 0.
Value asFloat(GradBuilder &b, Value cond, Value like) {
  return b.build<CastOp>(cond, {b.named("to", TypeAttr::get(typeOf(like).getElementType()))});
}

/// The reduction axes of a reduce op: its `axes` (the run-time form is
/// refused before rules run: shapes are static).
SmallVector<int64_t> reducedAxes(Operation *op) {
  return SmallVector<int64_t>(llvm::cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef());
}

/// Elements each output of a reduction over `axes` of `type` reduces.
int64_t reducedCount(RankedTensorType type, ArrayRef<int64_t> axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= type.getDimSize(a);
  return n;
}

/// The adjoint of a mean over `axes` of `type`: g spread back, over the
/// elements each mean took.
Value meanGrad(GradBuilder &b, Value g, RankedTensorType type, ArrayRef<int64_t> axes) {
  return b.spread(b.build<MulOp>({g, b.scalar(g, 1.0 / reducedCount(type, axes))}), type, axes);
}

/// The matmul's adjoints: C = op(A) op(B) with op a transpose where the
/// flag says, batch dimensions broadcast.
Grads matmulGrads(GradBuilder &b, Operation *op, Value g) {
  auto mm = llvm::cast<MatMulOp>(op);
  Value a = mm.getLhs(), w = mm.getRhs();
  bool ta = mm.getTransposeA(), tb = mm.getTransposeB();
  auto product = [&](Value x, Value y, bool tx, bool ty) {
    return b.build<MatMulOp>({x, y}, {b.named("transpose_a", b.builder.getBoolAttr(tx)),
                                      b.named("transpose_b", b.builder.getBoolAttr(ty))});
  };
  Value ga = !ta ? product(g, w, false, !tb) : product(w, g, tb, true);
  Value gb = !tb ? product(a, g, !ta, false) : product(g, a, true, ta);
  return SmallVector<Value>{b.unbroadcast(ga, typeOf(a)), b.unbroadcast(gb, typeOf(w))};
}

/// Layer norm over [axis, rank): y = (x - mean) * rstd * scale + bias.
Grads layerNormGrads(GradBuilder &b, Operation *op, Value g) {
  auto ln = llvm::cast<LayerNormOp>(op);
  Value x = ln.getInput(), scale = ln.getScale();
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank(), axis = static_cast<int64_t>(ln.getAxis());
  SmallVector<int64_t> normalised, leading;
  for (int64_t d = 0; d < rank; ++d)
    (d >= axis ? normalised : leading).push_back(d);
  auto keep = [&](Value v) {
    return b.build<ReduceMeanOp>(v, {b.axes(normalised),
                                     b.keepdims()});
  };
  Value centred = b.build<SubOp>({x, keep(x)});
  Value variance = keep(b.build<MulOp>({centred, centred}));
  Value rstd = b.build<RsqrtOp>(b.build<AddOp>(
      {variance, b.scalar(x, ln.getEpsilon().convertToDouble())}));
  Value xhat = b.build<MulOp>({centred, rstd});
  Value dxhat = b.build<MulOp>({g, scale});
  // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
  Value dx = b.build<MulOp>(
      {rstd, b.build<SubOp>({b.build<SubOp>({dxhat, keep(dxhat)}),
                             b.build<MulOp>({xhat, keep(b.build<MulOp>({dxhat, xhat}))})})});
  auto overLeading = [&](Value v) {
    return leading.empty() ? v : b.build<ReduceSumOp>(v, {b.axes(leading)});
  };
  SmallVector<Value> grads = {dx, overLeading(b.build<MulOp>({g, xhat}))};
  if (ln.getBias())
    grads.push_back(overLeading(g));
  return grads;
}

/// Gather along `axis`: the adjoint of the data adds each row of g where
/// it was read (scatter-add into zeros); indices take none.
Grads gatherGrads(GradBuilder &b, Operation *op, Value g) {
  auto gather = llvm::cast<GatherOp>(op);
  RankedTensorType data = typeOf(gather.getData()), indices = typeOf(gather.getIndices());
  int64_t axis = static_cast<int64_t>(gather.getAxis()), count = indices.getNumElements();
  // g as data's rank: [data[:axis], count, data[axis+1:]], the indices
  // broadcast to it.
  SmallVector<int64_t> shape(data.getShape()), along(data.getRank(), 1);
  shape[axis] = count;
  along[axis] = count;
  Value flat = b.reshape(g, shape);
  Value where = b.build<BroadcastOp>(b.reshape(gather.getIndices(), along),
                                     {b.named("shape", b.builder.getDenseI64ArrayAttr(shape))});
  Value scattered = b.build<ScatterElementsOp>(
      {b.splat(data, 0), where, flat},
      {b.axis(axis), b.named("reduction", b.builder.getStringAttr("add"))});
  return SmallVector<Value>{scattered, Value()};
}

/// A constant of `like`'s shape and device holding each element's
/// row-major position, as i64.
Value positions(GradBuilder &b, RankedTensorType like) {
  SmallVector<int64_t> values(like.getNumElements());
  std::iota(values.begin(), values.end(), 0);
  Type i64 = b.builder.getI64Type();
  auto literal = DenseElementsAttr::get(RankedTensorType::get(like.getShape(), i64),
                                        ArrayRef<int64_t>(values));
  return b.builder.create<ConstantOp>(
      b.loc, RankedTensorType::get(like.getShape(), i64, like.getEncoding()), literal);
}

/// `v` with `step` - 1 zeros after each entry along `axis` (a length of
/// n * step).
Value spreadAlong(GradBuilder &b, Value v, size_t axis, int64_t step) {
  if (step == 1)
    return v;
  SmallVector<int64_t> shape(typeOf(v).getShape()), split(shape);
  split.insert(split.begin() + axis + 1, 1);
  SmallVector<int64_t> low(split.size(), 0), high(split.size(), 0);
  high[axis + 1] = step - 1;
  shape[axis] *= step;
  return b.reshape(b.pad(b.reshape(v, split), low, high), shape);
}

/// `v` [N, C, P, Q] with stride - 1 zeros between its entries along the
/// last two dimensions: [N, C, (P - 1) * sh + 1, (Q - 1) * sw + 1].
Value spreadByStrides(GradBuilder &b, Value v, ArrayRef<int64_t> stride) {
  if (stride[0] == 1 && stride[1] == 1)
    return v;
  ArrayRef<int64_t> shape = typeOf(v).getShape();
  int64_t n = shape[0], c = shape[1], p = shape[2], q = shape[3];
  Value apart = b.pad(b.reshape(v, {n, c, p, 1, q, 1}), {0, 0, 0, 0, 0, 0},
                      {0, 0, 0, stride[0] - 1, 0, stride[1] - 1});
  return b.slice(b.reshape(apart, {n, c, p * stride[0], q * stride[1]}), {0, 0, 0, 0},
                 {n, c, (p - 1) * stride[0] + 1, (q - 1) * stride[1] + 1}, {1, 1, 1, 1});
}

/// A 2-D convolution (NCHW, any groups): the filter's adjoint correlates
/// the padded input with g (strides and dilations trade places); the
/// input's convolves g, spread by the strides and padded by the dilated
/// filter's extent, with the filter flipped and its channels swapped within
/// each group, then crops the padding; the bias's sums g over all but the
/// channels.
Grads conv2dGrads(GradBuilder &b, Operation *op, Value g) {
  auto conv = llvm::cast<Conv2dOp>(op);
  Value x = conv.getInput(), w = conv.getFilter();
  auto ints = [&](ArrayRef<int64_t> v) { return b.builder.getDenseI64ArrayAttr(v); };
  auto transpose = [&](Value v, ArrayRef<int64_t> perm) {
    return b.build<TransposeOp>(v, {b.named("perm", ints(perm))});
  };
  auto slice = [&](Value v, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                   ArrayRef<int64_t> steps) { return b.slice(v, starts, ends, steps); };
  auto pad = [&](Value v, ArrayRef<int64_t> low, ArrayRef<int64_t> high) {
    return b.pad(v, low, high);
  };
  ArrayRef<int64_t> in = typeOf(x).getShape(), filter = typeOf(w).getShape(),
                    out = typeOf(g).getShape();
  int64_t n = in[0], c = in[1], h = in[2], wd = in[3], k = filter[0], r = filter[2],
          s = filter[3], p = out[2], q = out[3];
  int64_t groups = conv.getGroups(), cg = c / groups, kg = k / groups;
  ArrayRef<int64_t> stride = conv.getStrides(), padding = conv.getPadding(),
                    dilation = conv.getDilations();
  int64_t hp = h + padding[0] + padding[2], wp = wd + padding[1] + padding[3];
  NamedAttribute grouped = b.named("groups", b.builder.getI64IntegerAttr(groups));

  // dW[k, c', r, s] = sum over n, p, q of g[n, k, p, q] x_pad[n, G(k) cg + c',
  // p*sh + r*dh, q*sw + s*dw]: a convolution of the padded input, its
  // channels within a group as the batch and (group, n) as the channels,
  // with g, (group, k') as the output channels and n as the input ones,
  // strides and dilations trading places.
  Value xPadded = pad(x, {0, 0, padding[0], padding[1]}, {0, 0, padding[2], padding[3]});
  Value xBatched = b.reshape(
      transpose(b.reshape(xPadded, {n, groups, cg, hp, wp}), {2, 1, 0, 3, 4}),
      {cg, groups * n, hp, wp});
  Value gFilter = b.reshape(transpose(b.reshape(g, {n, groups, kg, p, q}), {1, 2, 0, 3, 4}),
                            {k, n, p, q});
  Value correlated = b.build<Conv2dOp>(
      {xBatched, gFilter},
      {b.named("strides", ints(dilation)), b.named("dilations", ints(stride)), grouped});
  Value dw = transpose(slice(correlated, {0, 0, 0, 0}, {cg, k, r, s}, {1, 1, 1, 1}),
                       {1, 0, 2, 3});

  // dx: g with stride - 1 zeros between its entries, padded by the
  // dilated filter's extent, against the filter flipped, its channels
  // swapped within each group.
  Value spread = spreadByStrides(b, g, stride);
  int64_t eh = (r - 1) * dilation[0], ew = (s - 1) * dilation[1];
  Value swapped = b.reshape(
      transpose(b.reshape(w, {groups, kg, cg, r, s}), {0, 2, 1, 3, 4}), {c, kg, r, s});
  Value flipped = slice(swapped, {0, 0, r - 1, s - 1}, {c, kg, -1, -1}, {1, 1, -1, -1});
  Value dxPadded = b.build<Conv2dOp>({pad(spread, {0, 0, eh, ew}, {0, 0, eh, ew}), flipped},
                                     {b.named("dilations", ints(dilation)), grouped});
  // Rows and columns past the last window's reach got nothing.
  int64_t covered = (p - 1) * stride[0] + 1 + eh, coveredW = (q - 1) * stride[1] + 1 + ew;
  dxPadded = pad(dxPadded, {0, 0, 0, 0}, {0, 0, hp - covered, wp - coveredW});
  Value dx = slice(dxPadded, {0, 0, padding[0], padding[1]},
                   {n, c, padding[0] + h, padding[1] + wd}, {1, 1, 1, 1});
  SmallVector<Value> grads = {dx, dw};
  if (conv.getBias())
    grads.push_back(b.build<ReduceSumOp>(g, {b.axes({0, 2, 3})}));
  return grads;
}

/// Max and average pooling (NCHW): per kernel position, the window
/// entries it read (a strided slice of the padded input) get their share
/// of g, placed back where they came from; the padding is cropped.
/// Max pooling gives each window's g to its first maximum (as the
/// reference takes it); average pooling to every entry, over the count
/// the window divided by.
Grads poolGrads(GradBuilder &b, Operation *op, Value g) {
  bool max = llvm::isa<MaxPool2dOp>(op);
  Value x = op->getOperand(0);
  auto attr = [&](StringRef name) {
    return llvm::cast<DenseI64ArrayAttr>(op->getAttr(name)).asArrayRef();
  };
  ArrayRef<int64_t> kernel = attr("kernel"), stride = attr("strides"),
                    padding = attr("padding"), dilation = attr("dilations");
  ArrayRef<int64_t> in = typeOf(x).getShape(), out = typeOf(g).getShape();
  int64_t n = in[0], c = in[1], h = in[2], w = in[3], p = out[2], q = out[3];
  // With ceil_mode the last windows may overhang even the padding: those
  // taps count for nothing (the reference's rule), so the padded input
  // grows by the overhang, never the maximum and never counted.
  int64_t overH = std::max<int64_t>(0, (p - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1 -
                                           (h + padding[0] + padding[2]));
  int64_t overW = std::max<int64_t>(0, (q - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1 -
                                           (w + padding[1] + padding[3]));
  int64_t hp = h + padding[0] + padding[2] + overH, wp = w + padding[1] + padding[3] + overW;
  SmallVector<int64_t> low = {0, 0, padding[0], padding[1]},
                       high = {0, 0, padding[2] + overH, padding[3] + overW};
  auto window = [&](Value padded, int64_t r, int64_t s) {
    return b.slice(padded, {0, 0, r * dilation[0], s * dilation[1]},
                   {n, c, r * dilation[0] + (p - 1) * stride[0] + 1,
                    s * dilation[1] + (q - 1) * stride[1] + 1},
                   {1, 1, stride[0], stride[1]});
  };
  auto placeBack = [&](Value share, int64_t r, int64_t s) {
    int64_t top = r * dilation[0], left = s * dilation[1];
    return b.pad(spreadByStrides(b, share, stride), {0, 0, top, left},
                 {0, 0, hp - top - (p - 1) * stride[0] - 1, wp - left - (q - 1) * stride[1] - 1});
  };
  Value share = g, taken, padded;
  if (max) {
    padded = b.build<PadOp>(x, {b.named("low", b.builder.getDenseI64ArrayAttr(low)),
                                b.named("high", b.builder.getDenseI64ArrayAttr(high)),
                                b.named("value", b.builder.getF64FloatAttr(-INFINITY))});
    taken = b.splat(typeOf(g), 0);
  } else {
    // The count each window divided by: its size, or the entries it read
    // that are not padding (without count_include_pad), or in the padded
    // input (with it, where a window overhangs).
    Value count = b.scalar(g, kernel[0] * kernel[1]);
    bool includePad = llvm::cast<BoolAttr>(op->getAttr("count_include_pad")).getValue();
    if (!includePad || overH || overW) {
      Value inside =
          includePad
              ? b.pad(b.splat(RankedTensorType::get({n, c, hp - overH, wp - overW},
                                                    typeOf(x).getElementType(),
                                                    typeOf(x).getEncoding()),
                              1),
                      {0, 0, 0, 0}, {0, 0, overH, overW})
              : b.pad(b.splat(typeOf(x), 1), low, high);
      count = Value();
      for (int64_t r = 0; r < kernel[0]; ++r)
        for (int64_t s = 0; s < kernel[1]; ++s) {
          Value read = window(inside, r, s);
          count = count ? b.build<AddOp>({count, read}) : read;
        }
    }
    share = b.build<DivOp>({g, count});
  }
  Value dx;
  for (int64_t r = 0; r < kernel[0]; ++r)
    for (int64_t s = 0; s < kernel[1]; ++s) {
      Value part = share;
      if (max) {
        // The first kernel position holding the maximum takes it.
        Value first = b.build<MulOp>(
            {asFloat(b, b.build<EqOp>({window(padded, r, s), op->getResult(0)}), g),
             b.build<SubOp>({b.scalar(g, 1), taken})});
        taken = b.build<AddOp>({taken, first});
        part = b.build<MulOp>({g, first});
      }
      Value placed = placeBack(part, r, s);
      dx = dx ? b.build<AddOp>({dx, placed}) : placed;
    }
  return one(b.slice(dx, {0, 0, padding[0], padding[1]}, {n, c, padding[0] + h, padding[1] + w},
                     {1, 1, 1, 1}));
}

/// Inference batch norm over dimension 1: y = (x - mean) * scale *
/// rsqrt(var + eps) + bias, every parameter a weight one may train.
Grads batchNormGrads(GradBuilder &b, Operation *op, Value g) {
  auto bn = llvm::cast<BatchNormOp>(op);
  Value x = bn.getInput();
  int64_t rank = typeOf(x).getRank(), channels = typeOf(x).getDimSize(1);
  SmallVector<int64_t> perChannel(rank, 1), others;
  perChannel[1] = channels;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1)
      others.push_back(d);
  auto along = [&](Value v) { return b.reshape(v, perChannel); };
  Value inv = b.build<RsqrtOp>(
      b.build<AddOp>({bn.getVariance(), b.scalar(x, bn.getEpsilon().convertToDouble())}));
  Value scale = bn.getScale();
  Value centred = b.build<SubOp>({x, along(bn.getMean())});
  Value dx = b.build<MulOp>({g, along(b.build<MulOp>({scale, inv}))});
  Value dbias = b.build<ReduceSumOp>(g, {b.axes(others)});
  Value dscale = b.build<MulOp>(
      {b.build<ReduceSumOp>(b.build<MulOp>({g, centred}), {b.axes(others)}), inv});
  Value dmean = b.build<NegOp>(b.build<MulOp>({dbias, b.build<MulOp>({scale, inv})}));
  // d rsqrt(v) = -rsqrt(v)^3 / 2
  Value dvar = b.build<MulOp>(
      {b.build<MulOp>({dscale, scale}),
       b.build<MulOp>({b.build<MulOp>({inv, inv}), b.scalar(x, -0.5)})});
  return SmallVector<Value>{dx, dscale, dbias, dmean, dvar};
}

const llvm::StringMap<GradRule> &table() {
  static const llvm::StringMap<GradRule> rules = [] {
    llvm::StringMap<GradRule> m;
    // Elementwise arithmetic.
    m["kiln.add"] = binary([](GradBuilder &, Value, Value, Value, Value g) {
      return std::pair(g, g);
    });
    m["kiln.sub"] = binary([](GradBuilder &b, Value, Value, Value, Value g) {
      return std::pair(g, b.build<NegOp>(g));
    });
    m["kiln.mul"] = binary([](GradBuilder &b, Value x, Value y, Value, Value g) {
      return std::pair(b.build<MulOp>({g, y}), b.build<MulOp>({g, x}));
    });
    m["kiln.div"] = binary([](GradBuilder &b, Value, Value y, Value r, Value g) {
      Value ga = b.build<DivOp>({g, y});
      return std::pair(ga, b.build<NegOp>(b.build<MulOp>({ga, r})));
    });
    // max/min: the adjoint goes to the operand chosen (the left one on
    // ties, as max(x, 0) then passes it at 0).
    auto chosen = [](bool max) {
      return binary([max](GradBuilder &b, Value x, Value y, Value, Value g) {
        Value left = max ? b.build<GeOp>({x, y}) : b.build<LeOp>({x, y});
        Value zero = b.scalar(g, 0);
        return std::pair(b.select(left, g, zero), b.select(left, zero, g));
      });
    };
    m["kiln.max"] = chosen(true);
    m["kiln.min"] = chosen(false);
    m["kiln.pow"] = binary([](GradBuilder &b, Value x, Value p, Value r, Value g) {
      Value dx = b.build<MulOp>(
          {g, b.build<MulOp>({p, b.build<PowOp>({x, b.build<SubOp>({p, b.scalar(p, 1)})})})});
      return std::pair(dx, b.build<MulOp>({g, b.build<MulOp>({r, b.build<LogOp>(x)})}));
    });
    m["kiln.neg"] = unary([](GradBuilder &b, Value, Value, Value g) { return b.build<NegOp>(g); });
    m["kiln.abs"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<MulOp>({g, b.build<SignOp>(x)});
    });
    m["kiln.exp"] = unary([](GradBuilder &b, Value, Value y, Value g) {
      return b.build<MulOp>({g, y});
    });
    m["kiln.log"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<DivOp>({g, x});
    });
    m["kiln.sqrt"] = unary([](GradBuilder &b, Value, Value y, Value g) {
      return b.build<DivOp>({b.build<MulOp>({g, b.scalar(g, 0.5)}), y});
    });
    m["kiln.rsqrt"] = unary([](GradBuilder &b, Value x, Value y, Value g) {
      // d(x^-1/2) = -x^-3/2 / 2 = -y / (2x)
      Value half = b.build<MulOp>({g, b.build<MulOp>({y, b.scalar(g, 0.5)})});
      return b.build<NegOp>(b.build<DivOp>({half, x}));
    });
    m["kiln.tanh"] = unary([](GradBuilder &b, Value, Value y, Value g) {
      return b.build<MulOp>({g, b.build<SubOp>({b.scalar(y, 1), b.build<MulOp>({y, y})})});
    });
    m["kiln.sigmoid"] = unary([](GradBuilder &b, Value, Value y, Value g) {
      return b.build<MulOp>({g, b.build<MulOp>({y, b.build<SubOp>({b.scalar(y, 1), y})})});
    });
    // g where the ReLU passed its input: sign(y) is 1 there, else 0. (Float
    // ops throughout, so the mask fuses into the op computing g, as an
    // i1 comparison and a select would not on the CPU.)
    m["kiln.relu"] = unary([](GradBuilder &b, Value, Value y, Value g) {
      return b.build<MulOp>({g, b.build<SignOp>(y)});
    });
    // gelu(x) = x * Phi(x): Phi(x) + x * phi(x).
    m["kiln.gelu"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      Value cdf = b.build<MulOp>(
          {b.scalar(x, 0.5),
           b.build<AddOp>({b.scalar(x, 1),
                           b.build<ErfOp>(b.build<MulOp>({x, b.scalar(x, M_SQRT1_2)}))})});
      Value pdf = b.build<MulOp>(
          {b.scalar(x, 0.5 * M_2_SQRTPI * M_SQRT1_2),
           b.build<ExpOp>(b.build<MulOp>({b.build<MulOp>({x, x}), b.scalar(x, -0.5)}))});
      return b.build<MulOp>({g, b.build<AddOp>({cdf, b.build<MulOp>({x, pdf})})});
    });
    m["kiln.erf"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      Value e = b.build<ExpOp>(b.build<NegOp>(b.build<MulOp>({x, x})));
      return b.build<MulOp>({g, b.build<MulOp>({e, b.scalar(x, M_2_SQRTPI)})});
    });
    m["kiln.sin"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<MulOp>({g, b.build<CosOp>(x)});
    });
    m["kiln.cos"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<NegOp>(b.build<MulOp>({g, b.build<SinOp>(x)}));
    });
    m["kiln.tan"] = unary([](GradBuilder &b, Value, Value y, Value g) {
      return b.build<MulOp>({g, b.build<AddOp>({b.scalar(y, 1), b.build<MulOp>({y, y})})});
    });
    // 1 / sqrt(1 - x^2), its sign for acos; 1 / (1 + x^2) for atan.
    auto arcsine = [](bool negate) {
      return unary([negate](GradBuilder &b, Value x, Value, Value g) {
        Value root = b.build<SqrtOp>(b.build<SubOp>({b.scalar(x, 1), b.build<MulOp>({x, x})}));
        Value d = b.build<DivOp>({g, root});
        return negate ? b.build<NegOp>(d) : d;
      });
    };
    m["kiln.asin"] = arcsine(false);
    m["kiln.acos"] = arcsine(true);
    m["kiln.atan"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<DivOp>({g, b.build<AddOp>({b.scalar(x, 1), b.build<MulOp>({x, x})})});
    });
    m["kiln.sinh"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<MulOp>({g, b.build<CoshOp>(x)});
    });
    m["kiln.cosh"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<MulOp>({g, b.build<SinhOp>(x)});
    });
    // 1 / sqrt(x^2 + 1), 1 / sqrt(x^2 - 1), 1 / (1 - x^2).
    m["kiln.asinh"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<DivOp>(
          {g, b.build<SqrtOp>(b.build<AddOp>({b.build<MulOp>({x, x}), b.scalar(x, 1)}))});
    });
    m["kiln.acosh"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<DivOp>(
          {g, b.build<SqrtOp>(b.build<SubOp>({b.build<MulOp>({x, x}), b.scalar(x, 1)}))});
    });
    m["kiln.atanh"] = unary([](GradBuilder &b, Value x, Value, Value g) {
      return b.build<DivOp>({g, b.build<SubOp>({b.scalar(x, 1), b.build<MulOp>({x, x})})});
    });
    // r = a - b q with q the rounded quotient (truncated for fmod, floored
    // otherwise), constant almost everywhere: dr/da = 1, dr/db = -q =
    // (r - a) / b, which holds for either rounding.
    m["kiln.mod"] = binary([](GradBuilder &b, Value x, Value y, Value r, Value g) {
      Value q = b.build<DivOp>({b.build<SubOp>({r, x}), y});
      return std::pair(g, b.build<MulOp>({g, q}));
    });
    // Zero almost everywhere: no gradient flows.
    for (const char *name : {"kiln.floor", "kiln.ceil", "kiln.round", "kiln.sign"})
      m[name] = nullptr;
    m["kiln.select"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      auto s = llvm::cast<SelectOp>(op);
      Value zero = b.scalar(g, 0);
      return SmallVector<Value>{Value(),
                                b.unbroadcast(b.select(s.getCond(), g, zero), typeOf(s.getLhs())),
                                b.unbroadcast(b.select(s.getCond(), zero, g), typeOf(s.getRhs()))};
    };
    // A float-to-float cast: the adjoint cast back.
    // (From a float: a cast from an integer has no active operand.)
    m["kiln.cast"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      Type from = typeOf(op->getOperand(0)).getElementType();
      return one(b.build<CastOp>(g, {b.named("to", TypeAttr::get(from))}));
    };

    // Data movement: the adjoint moved back.
    m["kiln.reshape"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      return one(b.reshape(g, typeOf(op->getOperand(0)).getShape()));
    };
    m["kiln.transpose"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      ArrayRef<int64_t> perm = llvm::cast<TransposeOp>(op).getPerm();
      SmallVector<int64_t> inverse(perm.size());
      for (size_t d = 0; d < perm.size(); ++d)
        inverse[perm[d]] = d;
      return one(
          b.build<TransposeOp>(g, {b.named("perm", b.builder.getDenseI64ArrayAttr(inverse))}));
    };
    // A copy to another device: the adjoint copied back.
    m["kiln.transfer"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      std::string from = getEncoding(op->getOperand(0).getType()).getDeviceString();
      return one(b.build<TransferOp>(g, {b.named("to", b.builder.getStringAttr(from))}));
    };
    m["kiln.broadcast"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      return one(b.unbroadcast(g, typeOf(op->getOperand(0))));
    };
    // The adjoint placed back: spread by the steps (step - 1 zeros after
    // each entry), then padded out to the input. Along a negative step the
    // slice reads backwards from its start: the adjoint reversed is that
    // of the forward slice from its last entry.
    m["kiln.slice"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      auto slice = llvm::cast<SliceOp>(op);
      ArrayRef<int64_t> shape = typeOf(slice.getInput()).getShape();
      SmallVector<int64_t> starts(slice.getStarts()), steps(slice.getSteps());
      ArrayRef<int64_t> counts = typeOf(g).getShape();
      for (size_t d = 0; d < shape.size(); ++d) {
        if (steps[d] > 0 || counts[d] == 0)
          continue;
        SmallVector<int64_t> from(shape.size(), 0), to(counts), by(shape.size(), 1);
        from[d] = counts[d] - 1;
        to[d] = -1;
        by[d] = -1;
        g = b.slice(g, from, to, by);
        starts[d] += (counts[d] - 1) * steps[d];
        steps[d] = -steps[d];
      }
      Value spread = g;
      for (size_t d = 0; d < shape.size(); ++d)
        spread = spreadAlong(b, spread, d, steps[d]);
      ArrayRef<int64_t> spreadShape = typeOf(spread).getShape();
      SmallVector<int64_t> high, cropped(spreadShape), zeros(shape.size(), 0),
          ones(shape.size(), 1);
      for (size_t d = 0; d < shape.size(); ++d) {
        // Past the input's end: the zeros after the last entry.
        cropped[d] = std::min(spreadShape[d], shape[d] - starts[d]);
        high.push_back(shape[d] - starts[d] - cropped[d]);
      }
      return one(b.pad(b.slice(spread, zeros, cropped, ones), starts, high));
    };
    m["kiln.concat"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      auto concat = llvm::cast<ConcatOp>(op);
      int64_t axis = static_cast<int64_t>(concat.getAxis()), offset = 0;
      SmallVector<Value> grads;
      for (Value input : concat.getInputs()) {
        ArrayRef<int64_t> shape = typeOf(input).getShape();
        SmallVector<int64_t> starts(shape.size(), 0), ends(typeOf(g).getShape()),
            steps(shape.size(), 1);
        starts[axis] = offset;
        ends[axis] = offset + shape[axis];
        offset += shape[axis];
        grads.push_back(b.slice(g, starts, ends, steps));
      }
      return grads;
    };
    m["kiln.gather"] = gatherGrads;
    // Padding undone: the adjoint cropped to the input.
    m["kiln.pad"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      auto pad = llvm::cast<PadOp>(op);
      ArrayRef<int64_t> low = pad.getLow(), shape = typeOf(pad.getInput()).getShape();
      SmallVector<int64_t> ends, steps(shape.size(), 1);
      for (size_t d = 0; d < shape.size(); ++d)
        ends.push_back(low[d] + shape[d]);
      return one(b.slice(g, low, ends, steps));
    };
    // The adjoint added back where each element came from.
    m["kiln.gather_elements"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      auto gather = llvm::cast<GatherElementsOp>(op);
      Value scattered = b.build<ScatterElementsOp>(
          {b.splat(typeOf(gather.getData()), 0), gather.getIndices(), g},
          {b.axis(gather.getAxis()), b.named("reduction", b.builder.getStringAttr("add"))});
      return SmallVector<Value>{scattered, Value()};
    };
    // Updates get the adjoint where they went; data keeps it where nothing
    // was assigned over it (all of it when updates are added). Assigning,
    // of updates to one place the last wins and the others get nothing:
    // scattering each update's position finds the winners. (Mul
    // reductions: whyNoDerivative refuses them.)
    m["kiln.scatter_elements"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      auto scatter = llvm::cast<ScatterElementsOp>(op);
      Value indices = scatter.getIndices();
      Value updates = b.build<GatherElementsOp>({g, indices}, {b.axis(scatter.getAxis())});
      if (scatter.getReduction() != "none")
        return SmallVector<Value>{g, Value(), updates};
      Value data = b.build<ScatterElementsOp>(
          {g, indices, b.splat(typeOf(scatter.getUpdates()), 0)}, {b.axis(scatter.getAxis())});
      RankedTensorType dataType = typeOf(scatter.getData());
      Value ids = positions(b, typeOf(scatter.getUpdates()));
      Value unset = b.splat(RankedTensorType::get(dataType.getShape(), b.builder.getI64Type(),
                                                  dataType.getEncoding()),
                            -1);
      Value winners = b.build<ScatterElementsOp>({unset, indices, ids}, {b.axis(scatter.getAxis())});
      Value won = b.build<EqOp>(
          {b.build<GatherElementsOp>({winners, indices}, {b.axis(scatter.getAxis())}), ids});
      return SmallVector<Value>{data, Value(), b.select(won, updates, b.scalar(g, 0))};
    };

    // Reductions.
    m["kiln.reduce_sum"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      return one(b.spread(g, typeOf(op->getOperand(0)), reducedAxes(op)));
    };
    m["kiln.reduce_mean"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      return one(meanGrad(b, g, typeOf(op->getOperand(0)), reducedAxes(op)));
    };
    // max/min over axes: shared equally among the elements that attain it.
    auto extremum = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      Value x = op->getOperand(0);
      RankedTensorType type = typeOf(x);
      SmallVector<int64_t> axes = reducedAxes(op);
      Value attains = asFloat(b, b.build<EqOp>({x, b.spread(op->getResult(0), type, axes)}), x);
      Value ties = b.spread(b.build<ReduceSumOp>(attains, {b.axes(axes)}), type, axes);
      return one(b.build<DivOp>({b.build<MulOp>({b.spread(g, type, axes), attains}), ties}));
    };
    // The product of the others, exactly, zeros included: y / x where no
    // element is zero; at the only zero, the product of the rest; else 0.
    m["kiln.reduce_prod"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      Value x = op->getOperand(0);
      RankedTensorType type = typeOf(x);
      SmallVector<int64_t> axes = reducedAxes(op);
      Value zero = b.build<EqOp>({x, b.scalar(x, 0)});
      Value nonzero = b.select(zero, b.scalar(x, 1), x);
      Value rest = b.spread(b.build<ReduceProdOp>(nonzero, {b.axes(axes)}), type, axes);
      Value zeros = b.spread(b.build<ReduceSumOp>(asFloat(b, zero, x), {b.axes(axes)}), type, axes);
      Value onlyZero = asFloat(b, b.build<EqOp>({zeros, b.scalar(x, 1)}), x);
      Value noZero = asFloat(b, b.build<EqOp>({zeros, b.scalar(x, 0)}), x);
      Value factor = b.select(zero, onlyZero, b.build<DivOp>({noZero, nonzero}));
      return one(b.build<MulOp>({b.spread(g, type, axes), b.build<MulOp>({rest, factor})}));
    };
    m["kiln.reduce_max"] = extremum;
    m["kiln.reduce_min"] = extremum;
    m["kiln.softmax"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      Value y = op->getResult(0);
      int64_t axis = static_cast<int64_t>(llvm::cast<SoftmaxOp>(op).getAxis());
      Value dot = b.build<ReduceSumOp>(b.build<MulOp>({g, y}),
                                       {b.axes({axis}), b.keepdims()});
      return one(b.build<MulOp>({y, b.build<SubOp>({g, dot})}));
    };
    m["kiln.log_softmax"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      Value y = op->getResult(0);
      int64_t axis = static_cast<int64_t>(llvm::cast<LogSoftmaxOp>(op).getAxis());
      Value total = b.build<ReduceSumOp>(g, {b.axes({axis}), b.keepdims()});
      return one(b.build<SubOp>({g, b.build<MulOp>({b.build<ExpOp>(y), total})}));
    };
    m["kiln.layer_norm"] = layerNormGrads;
    m["kiln.batch_norm"] = batchNormGrads;
    m["kiln.conv2d"] = conv2dGrads;
    m["kiln.global_avg_pool"] = [](GradBuilder &b, Operation *op, Value g) -> Grads {
      RankedTensorType type = typeOf(op->getOperand(0));
      SmallVector<int64_t> spatial;
      for (int64_t d = 2; d < type.getRank(); ++d)
        spatial.push_back(d);
      return one(meanGrad(b, g, type, spatial));
    };
    m["kiln.matmul"] = matmulGrads;
    m["kiln.max_pool2d"] = poolGrads;
    m["kiln.avg_pool2d"] = poolGrads;
    return m;
  }();
  return rules;
}

} // namespace

void mlir::kiln::replaceOutputs(func::FuncOp func, ArrayRef<Value> outputs,
                                ArrayRef<StringAttr> names) {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder builder(ret);
  builder.create<func::ReturnOp>(ret.getLoc(), outputs);
  ret.erase();
  SmallVector<Type> types;
  for (Value v : outputs)
    types.push_back(v.getType());
  func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(), types));
  SmallVector<DictionaryAttr> attrs;
  for (StringAttr name : names)
    attrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr("kiln.name", name)));
  func.setAllResultAttrs(attrs);
}

std::string mlir::kiln::whyNoDerivative(Operation *op) {
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  for (Type type : types)
    if (TensorEncodingAttr e = getEncoding(type); e && !e.isRowMajor())
      return "values laid out other than row-major have no derivative so far";
  if (auto slice = llvm::dyn_cast<SliceOp>(op); slice && slice.getRunTimeBounds())
    return "slices with bounds read at run time have no derivative so far";
  if (auto scatter = llvm::dyn_cast<ScatterElementsOp>(op);
      scatter && scatter.getReduction() != "none" && scatter.getReduction() != "add")
    return "scatters that multiply have no derivative so far";
  return "";
}

std::optional<GradRule> mlir::kiln::findGradRule(StringRef name) {
  auto it = table().find(name);
  if (it == table().end())
    return std::nullopt;
  return it->second;
}
